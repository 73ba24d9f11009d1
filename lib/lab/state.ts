/**
 * `<dir>/lab.json`: what a lab is made of, written before anything is created so `down` can undo a crashed `up`.
 *
 * @module
 */

import { join } from "node:path";
import { readJsonIfPresent, writeFileAtomic } from "../util/mod.ts";
import { LabError } from "./errors.ts";
import type { DockerdConfig, DockerNetworking } from "./dockerd.ts";
import type { LabPlan, Profile } from "./plan.ts";

/** The lab's saved state. */
export interface LabState {
  /** Format version. */
  version: 1;
  /** `creating` until `up` finished; `up` after. */
  phase: "creating" | "up";
  /** When `up` started (RFC 3339). */
  createdAt: string;
  /** The impairment profile. */
  profile: Profile;
  /** The plan: names, addresses and paths. */
  plan: LabPlan;
  /** Public keys by Machine name (private keys stay in their 0600 files). */
  publicKeys: Record<string, string>;
  /** Active partitions: each a pair of Machine-name groups that cannot reach each other. */
  partitions: [string[], string[]][];
  /** The extra environment every ployzd started with, so a restart or a boot starts it the same way. */
  daemonEnv?: Record<string, string>;
  /** How each dockerd runs its networking; absent in labs made before it was recorded: `off`. */
  dockerNetworking?: DockerNetworking;
  /** What each dockerd's `daemon.json` adds (insecure registries, download attempts); absent: nothing. */
  dockerdConfig?: DockerdConfig;
  /** Whether IP forwarding was on in each namespace before dockerd started; absent: on. */
  forwardingBeforeDocker?: boolean;
  /** Each Machine's btrfs Pool on a loop file of this size (`--pool btrfs:SIZE`); absent: no Pools. */
  poolBytes?: number;
}

/** The Docker networking a lab's dockerd restarts with. */
export function dockerNetworkingOf(state: LabState): DockerNetworking {
  return state.dockerNetworking ?? "off";
}

/** The state file of a lab directory. */
export function statePath(dir: string): string {
  return join(dir, "lab.json");
}

/** Reads the lab state; `undefined` when there is none. */
export async function readState(dir: string): Promise<LabState | undefined> {
  const state = await readJsonIfPresent(
    statePath(dir),
    (error) =>
      new LabError("internal", `Cannot read lab state "${statePath(dir)}": not JSON`, { cause: error }),
  );
  return state as LabState | undefined;
}

/** Reads the lab state, refusing when there is no lab in `dir`. */
export async function requireState(dir: string): Promise<LabState> {
  const state = await readState(dir);
  if (state === undefined) {
    throw new LabError("not_found", `Cannot find a lab in "${dir}": no lab.json (run "ployz lab up" first)`);
  }
  return state;
}

/** Writes the lab state atomically and durably. */
export async function writeState(dir: string, state: LabState): Promise<void> {
  const path = statePath(dir);
  await writeFileAtomic(path, JSON.stringify(state, null, 2) + "\n");
}
