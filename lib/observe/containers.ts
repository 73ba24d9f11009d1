/**
 * Finds this Machine's Ployz containers by reading Docker's own files, `<dockerRoot>/containers/<id>/config.v2.json`:
 * the Observe Store has no Docker socket, so it learns identities from the `ployz.*` labels there.
 *
 * @module
 */

import { join } from "node:path";

/** Who a container is, from its `ployz.*` labels. Empty strings where a label is absent. */
export interface ContainerIdentity {
  /** Docker's container id. */
  containerId: string;
  /** The container's name, without Docker's leading `/`. */
  name: string;
  /** `ployz.machine`: the Machine that owns the container. */
  machineId: string;
  /** `ployz.project`. */
  project: string;
  /** `ployz.service`. */
  service: string;
  /** `ployz.deployment`. */
  deployment: string;
  /** `ployz.slot`. */
  slot: string;
}

/**
 * The columns the Log Store's `containers` and the metrics' `metric_subjects` both keep of an identity (all but
 * the slot), each with its field, in the one order of their DDL, their inserts and {@link identityValues}.
 */
const IDENTITY_COLUMNS: readonly (readonly [string, keyof ContainerIdentity])[] = [
  ["container_id", "containerId"],
  ["name", "name"],
  ["machine_id", "machineId"],
  ["project", "project"],
  ["service", "service"],
  ["deployment", "deployment"],
];

/** The identity columns' DDL lines, the container id unique. */
export const IDENTITY_COLUMNS_DDL: string = IDENTITY_COLUMNS.map(([column]) =>
  `  ${column} TEXT NOT NULL${column === "container_id" ? " UNIQUE" : ""},`
).join("\n");

/** The identity columns' names, for an insert's column list. */
export const IDENTITY_COLUMN_NAMES: string = IDENTITY_COLUMNS.map(([column]) => column).join(", ");

/** An identity's values in the order of {@link IDENTITY_COLUMN_NAMES}, to bind to a statement. */
export function identityValues(identity: ContainerIdentity): string[] {
  return IDENTITY_COLUMNS.map(([, field]) => identity[field]);
}

/** A Ployz container found on disk, with where its `local` driver logs live. */
export interface FoundContainer extends ContainerIdentity {
  /** `<dockerRoot>/containers/<id>/local-logs`. */
  logDir: string;
}

/** What a scan saw. */
export interface ContainerScan {
  /** Ployz-owned containers (`ployz.managed=1`). */
  containers: FoundContainer[];
  /** Container directories whose config could not be read or parsed this time (retried on the next scan). */
  unreadable: string[];
}

interface ConfigV2 {
  ID?: string;
  Name?: string;
  Config?: { Labels?: Record<string, string> | null };
}

/** Reads the identity of a container from its parsed `config.v2.json`; `undefined` unless Ployz manages it. */
export function identityFromConfig(config: unknown): ContainerIdentity | undefined {
  if (typeof config !== "object" || config === null) return undefined;
  const c = config as ConfigV2;
  const labels = c.Config?.Labels ?? {};
  if (labels["ployz.managed"] !== "1" || typeof c.ID !== "string") return undefined;
  const label = (key: string): string => (typeof labels[key] === "string" ? labels[key] : "");
  return {
    containerId: c.ID,
    name: typeof c.Name === "string" ? c.Name.replace(/^\//, "") : "",
    machineId: label("ployz.machine"),
    project: label("ployz.project"),
    service: label("ployz.service"),
    deployment: label("ployz.deployment"),
    slot: label("ployz.slot"),
  };
}

/** Lists the Ployz containers under `<dockerRoot>/containers`. A missing directory is an empty scan. */
export async function scanContainers(dockerRoot: string): Promise<ContainerScan> {
  const root = join(dockerRoot, "containers");
  const scan: ContainerScan = { containers: [], unreadable: [] };
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(root));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return scan;
    throw error;
  }
  for (const entry of entries) {
    if (!entry.isDirectory) continue;
    const dir = join(root, entry.name);
    let text: string;
    try {
      text = await Deno.readTextFile(join(dir, "config.v2.json"));
    } catch (error) {
      // Removed between the listing and the read, or not written yet.
      if (error instanceof Deno.errors.NotFound) continue;
      scan.unreadable.push(entry.name);
      continue;
    }
    let identity: ContainerIdentity | undefined;
    try {
      identity = identityFromConfig(JSON.parse(text));
    } catch {
      scan.unreadable.push(entry.name);
      continue;
    }
    if (identity !== undefined) scan.containers.push({ ...identity, logDir: join(dir, "local-logs") });
  }
  return scan;
}
