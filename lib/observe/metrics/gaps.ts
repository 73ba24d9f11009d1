/**
 * Named gaps: a value the sampler could not read is recorded as the reason it could not, never as zero.
 *
 * @module
 */

/**
 * Why a value is missing.
 *
 * - `not_permitted`: the process may not read the file system holding the value (Deno asks for all permissions
 *   to read `/proc` and `/sys` themselves; a read-only bind mount of them elsewhere avoids that).
 * - `not_running`: the container exists but is not running, so it has no cgroup or network to read.
 * - `cgroup_not_found`: the container runs but none of the known cgroup paths holds it.
 * - `cgroup_file_unreadable`: a cgroup file is missing, unreadable or not in the expected format.
 * - `no_pid`: the container runs but `config.v2.json` names no init pid.
 * - `proc_unreadable`: a `/proc` file is missing, unreadable or not in the expected format.
 * - `config_unreadable`: the container's `config.v2.json` could not be read or parsed this round.
 * - `container_gone`: the container's directory disappeared since the previous round.
 * - `first_sample`: a rate or a delta needs a previous reading, and this is the first.
 * - `restarted`: the container started again since the previous reading, so its counters began anew.
 * - `counter_reset`: a counter went backwards.
 * - `timeout`: a slow source did not answer within its timeout.
 * - `source_failed`: a slow source failed.
 * - `not_sampled`: (queries only) no sample exists for that time.
 */
export type GapReason =
  | "not_permitted"
  | "not_running"
  | "cgroup_not_found"
  | "cgroup_file_unreadable"
  | "no_pid"
  | "proc_unreadable"
  | "config_unreadable"
  | "container_gone"
  | "first_sample"
  | "restarted"
  | "counter_reset"
  | "timeout"
  | "source_failed"
  | "not_sampled";

/** Every gap reason, in a stable order. */
export const GAP_REASONS: readonly GapReason[] = [
  "not_permitted",
  "not_running",
  "cgroup_not_found",
  "cgroup_file_unreadable",
  "no_pid",
  "proc_unreadable",
  "config_unreadable",
  "container_gone",
  "first_sample",
  "restarted",
  "counter_reset",
  "timeout",
  "source_failed",
  "not_sampled",
];

/** A value that could not be read, with the reason. */
export interface Gap {
  /** Why. */
  gap: GapReason;
}

/** A read value or a named gap. */
export type Reading = number | Gap;

/** Makes a gap. */
export function gap(reason: GapReason): Gap {
  return { gap: reason };
}

/** Whether `value` is a gap. */
export function isGap(value: Reading | undefined): value is Gap {
  return typeof value === "object" && value !== null;
}

/** Whether reading `path` is refused by this process's permissions (not merely missing or unreadable). */
export function readRefused(path: string): boolean {
  try {
    Deno.statSync(path);
    Deno.readDirSync(path).next();
    return false;
  } catch (error) {
    return error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied;
  }
}
