/**
 * The local Machine record, `<dataDir>/machine.json`: who this Machine is and which Cluster it joined. Read
 * tolerantly (fields a newer release wrote are kept on rewrite) and replaced atomically. The private key is not
 * here; it lives in `keys/wg.key`.
 *
 * @module
 */

import { join } from "node:path";
import * as z from "zod";
import { LABEL_LIMITS, labelKeyProblem, labelValueProblem } from "../deploy/machine/mod.ts";
import { RpcError } from "../rpc/mod.ts";
import { readJsonIfPresent, writeFileAtomic } from "../util/mod.ts";
import { isMintedId, mintId } from "./ids.ts";

/** The local record, as stored. */
export interface LocalMachine {
  /** Durable id, minted here once. */
  id: string;
  /** Machine Name; the hostname at first start. */
  name: string;
  /** `uninitialized` until `init` founds a Cluster here, then `participating`. */
  phase: string;
  /** Set once participating. */
  "cluster_id"?: string;
  /** Set once participating. */
  "cluster_name"?: string;
  /** The container subnet, set once participating. */
  subnet?: string;
  /** WireGuard public key, base64; the private key stays in `keys/wg.key`. */
  "public_key"?: string;
  /** When the id was minted. */
  "created_at"?: string;
  /** False when this Machine refuses Builds; absent, it accepts them. */
  "accepts_builds"?: boolean;
  /** Set once a peer proved this Machine was retired from its Cluster (`machine rm --gone`): it syncs no more. */
  removed?: { by: string; "by_name"?: string; at?: string; "noticed_at"?: string };
  /** Fields a newer release wrote; kept on rewrite. */
  [field: string]: unknown;
}

const LocalMachineSchema: z.ZodType<LocalMachine> = z.looseObject({
  id: z.string().refine(isMintedId, "expected 26 lowercase base32 characters"),
  name: z.string().min(1).max(128),
  phase: z.string().min(1).max(64),
  "cluster_id": z.string().min(1).max(128).optional(),
  "cluster_name": z.string().min(1).max(128).optional(),
  subnet: z.string().max(64).optional(),
  "public_key": z.string().max(128).optional(),
  "created_at": z.string().max(64).optional(),
  "accepts_builds": z.boolean().optional(),
  removed: z.looseObject({
    by: z.string().min(1).max(128),
    "by_name": z.string().max(128).optional(),
    at: z.string().max(128).optional(),
    "noticed_at": z.string().max(64).optional(),
  }).optional(),
});

/** Where the record lives. */
export function machineFilePath(dataDir: string): string {
  return join(dataDir, "machine.json");
}

/** Reads the record; `undefined` when there is none yet. A file that cannot be read as a record throws. */
export async function readMachineFile(dataDir: string): Promise<LocalMachine | undefined> {
  const path = machineFilePath(dataDir);
  const json = await readJsonIfPresent(
    path,
    () => new Error(`Cannot read the Machine record "${path}": it is not JSON`),
  );
  if (json === undefined) return undefined;
  const parsed = LocalMachineSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(
      `Cannot read the Machine record "${path}": field "${issue.path.join(".")}": ${issue.message}`,
    );
  }
  return parsed.data;
}

/** Replaces the record atomically. */
export async function writeMachineFile(dataDir: string, record: LocalMachine): Promise<void> {
  await writeFileAtomic(machineFilePath(dataDir), JSON.stringify(record, null, 2) + "\n");
}

/** Reads the record, or mints a new uninitialized one named `defaultName` and writes it. */
export async function loadOrCreateMachine(
  dataDir: string,
  defaultName: string,
  now: () => Date = () => new Date(),
): Promise<{ record: LocalMachine; created: boolean }> {
  const found = await readMachineFile(dataDir);
  if (found !== undefined) return { record: found, created: false };
  const record: LocalMachine = {
    id: mintId(),
    name: defaultName,
    phase: "uninitialized",
    "created_at": now().toISOString(),
  };
  await Deno.mkdir(dataDir, { recursive: true });
  await writeMachineFile(dataDir, record);
  return { record, created: true };
}

/** The Machine Labels a record holds; a value that is not a string map reads as none. */
export function recordLabels(record: LocalMachine): Record<string, string> {
  const labels = record.labels;
  if (labels === null || typeof labels !== "object" || Array.isArray(labels)) return {};
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(labels)) if (typeof value === "string") out[key] = value;
  return out;
}

/**
 * The record after a `configure` request: labels set and removed, flags changed. Every key and value is checked
 * first, so a bad one changes nothing; the error names it.
 */
export function configuredRecord(
  record: LocalMachine,
  req: {
    "set_labels"?: Record<string, string>;
    "remove_labels"?: string[];
    "accepts_workloads"?: boolean;
    "accepts_ingress"?: boolean;
    "accepts_builds"?: boolean;
  },
): LocalMachine {
  const refuse = (message: string, details: Record<string, unknown>): never => {
    throw new RpcError("invalid_argument", `Machine "${record.name}": ${message} (nothing was changed)`, {
      details,
    });
  };
  const labels = recordLabels(record);
  for (const key of req.remove_labels ?? []) {
    const problem = labelKeyProblem(key);
    if (problem !== undefined) refuse(problem, { label: key });
    delete labels[key];
  }
  for (const [key, value] of Object.entries(req.set_labels ?? {})) {
    const problem = labelKeyProblem(key) ?? labelValueProblem(key, value);
    if (problem !== undefined) refuse(problem, { label: key });
    labels[key] = value;
  }
  if (Object.keys(labels).length > LABEL_LIMITS.count) {
    refuse(`a Machine holds at most ${LABEL_LIMITS.count} labels`, { count: Object.keys(labels).length });
  }
  const next: LocalMachine = { ...record };
  if (Object.keys(labels).length > 0) next.labels = Object.fromEntries(Object.entries(labels).sort());
  else delete next.labels;
  if (req.accepts_workloads !== undefined) next["accepts_workloads"] = req.accepts_workloads;
  if (req.accepts_ingress !== undefined) next["accepts_ingress"] = req.accepts_ingress;
  if (req.accepts_builds !== undefined) next["accepts_builds"] = req.accepts_builds;
  return next;
}
