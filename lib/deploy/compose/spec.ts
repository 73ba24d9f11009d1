/**
 * What a container reads at creation, its digest, and how two specs of one Service differ.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { canonicalJson } from "./canonical_json.ts";
import type { NormalizedProject, NormalizedService, NormalizedVolume } from "./types.ts";

/** How an existing container relates to a requested spec. */
export type SpecChange = "UpToDate" | "NeedsUpdate" | "NeedsRecreate";

/** The classification and the fields that caused it, so a Preview can say why. */
export interface SpecComparison {
  /** The overall classification. */
  change: SpecChange;
  /** Fields whose change forces a new container. */
  recreate: string[];
  /** Fields Docker can change on a running container (`docker update`). */
  update: string[];
}

/** Resource fields `docker update` changes in place. */
const UPDATABLE = ["nanoCpus", "memoryBytes", "memoryReservationBytes"] as const;

/** Service fields no container reads: they steer the planner, not the container. */
const PLANNER_ONLY = new Set([
  "mode",
  "replicas",
  "update",
  "preDeploy",
  "dependsOn",
  "profiles",
  "pullPolicy",
  // The image reference carries the build's content digest; where the context lies is no container setting.
  "build",
  // Where a container may run, not what it is: a Machine that still satisfies the constraints keeps it.
  "constraints",
]);

function sortedByJson<T>(list: readonly T[]): T[] {
  return [...list].sort((a, b) => {
    const left = canonicalJson(a);
    const right = canonicalJson(b);
    return left < right ? -1 : left > right ? 1 : 0;
  });
}

/**
 * The recreate-relevant view of a service: every field a container reads at creation, with lists whose
 * order does not matter (ports, mounts, capabilities) sorted, and named mounts carrying their volume's
 * definition. Resources that `docker update` can change are left out; see {@linkcode compareServiceSpecs}.
 */
function creationFields(
  service: NormalizedService,
  volumes: Record<string, NormalizedVolume>,
): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(service)) {
    if (PLANNER_ONLY.has(key) || key === "resources") continue;
    fields[key] = value;
  }
  // Fields added after Saved State was first written read as their defaults, so an older state compares equal.
  fields.readOnly = service.readOnly ?? false;
  fields.securityOpt = service.securityOpt ?? [];
  fields.devices = service.devices ?? [];
  fields.deviceRequests = service.deviceRequests ?? [];
  fields.pidsLimit = service.pidsLimit ?? null;
  fields.files = sortedByJson(service.files ?? []);
  fields.ports = sortedByJson(service.ports);
  fields.mounts = sortedByJson(
    service.mounts.map((mount) =>
      mount.type === "volume" ? { ...mount, volume: volumes[mount.source] ?? null } : mount
    ),
  );
  fields.capAdd = [...service.capAdd].sort();
  fields.capDrop = [...service.capDrop].sort();
  fields.caddy = service.caddy?.trim() ?? null;
  fields.shmSizeBytes = service.resources.shmSizeBytes;
  fields.ulimits = service.resources.ulimits;
  return fields;
}

/**
 * The sha256 (hex) of the canonical JSON of everything a container of `service` reads at creation: image
 * reference, command, entrypoint, environment (with env_file contents), labels, ports, mounts (with each
 * named volume's definition when `project` is given), healthcheck, user, working directory, resources and
 * the rest. Planner-only fields (replicas, mode, update order, pre-deploy hook, dependencies, profiles,
 * pull policy) are left out, so scaling does not change it. Equal digests mean UpToDate.
 */
export function serviceSpecDigest(service: NormalizedService, project?: NormalizedProject): string {
  const fields = creationFields(service, project?.volumes ?? {});
  for (const key of UPDATABLE) fields[key] = service.resources[key];
  return createHash("sha256").update(canonicalJson(fields)).digest("hex");
}

/**
 * Classifies how an existing container built from `current` relates to `requested`:
 * a changed pull policy of `always` always recreates; any change to what a container reads at creation
 * (including `x-machines` placement and `x-caddy`) recreates; a change only to CPU or memory limits is
 * NeedsUpdate; planner-only changes (replicas, update order, hooks, dependencies) leave the container
 * UpToDate, because adding or removing replicas is placement, not a change to this container. Switching
 * between replicated and global recreates. A changed `shm_size` recreates, because Docker cannot update it in
 * place.
 */
export function compareServiceSpecs(
  current: NormalizedService,
  requested: NormalizedService,
  volumes: { current?: NormalizedProject; requested?: NormalizedProject } = {},
): SpecComparison {
  const before = creationFields(current, volumes.current?.volumes ?? {});
  const after = creationFields(requested, volumes.requested?.volumes ?? {});
  const recreate = [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((key) => canonicalJson(before[key]) !== canonicalJson(after[key]))
    .sort();
  if (current.mode !== requested.mode) recreate.push("mode");
  // pull_policy: always re-resolves the tag at each Deploy; only a new digest (an image change) recreates.
  const update = UPDATABLE.filter((key) => current.resources[key] !== requested.resources[key]).map((key) =>
    `resources.${key}`
  );
  const change: SpecChange = recreate.length > 0
    ? "NeedsRecreate"
    : update.length > 0
    ? "NeedsUpdate"
    : "UpToDate";
  return { change, recreate, update };
}
