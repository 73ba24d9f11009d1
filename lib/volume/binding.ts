// Which Pool a Machine is bound to, kept in `<data>/pool.json` (0600) so the daemon finds it again after a restart.
// The btrfs Pool always lives at `<data>/pool`: a filesystem mounted there by the host (a block device in fstab), or
// a loop file `<data>/pool.img` the daemon attaches. ZFS names its dataset and mount root.
import { join } from "node:path";
import { readJsonIfPresent, writeFileAtomic } from "../util/mod.ts";
import { openBtrfsPool } from "./btrfs.ts";
import { VolumeError } from "./errors.ts";
import type { Exec } from "./exec.ts";
import { attachLoopPool } from "./loop.ts";
import type { Pool } from "./pool.ts";
import { zfsPool } from "./zfs.ts";

/** A Machine's Pool binding. */
export type PoolBinding =
  | { kind: "btrfs"; root: string; loop?: { file: string; sizeBytes: number } }
  | { kind: "zfs"; dataset: string; mountRoot: string };

const FILE = "pool.json";

/** The btrfs Pool root of a Machine with data directory `dataDir`. */
export function btrfsPoolRoot(dataDir: string): string {
  return join(dataDir, "pool");
}

/** The Machine's binding, or undefined when it has no Pool. A file that is not a binding is an error naming it. */
export async function readPoolBinding(dataDir: string): Promise<PoolBinding | undefined> {
  const path = join(dataDir, FILE);
  const value = await readJsonIfPresent(path, () => new VolumeError("internal", `${path} is not JSON`));
  if (value === undefined) return undefined;
  const b = value as Record<string, unknown>;
  if (b?.kind === "btrfs" && typeof b.root === "string") return value as PoolBinding;
  if (b?.kind === "zfs" && typeof b.dataset === "string" && typeof b.mountRoot === "string") {
    return value as PoolBinding;
  }
  throw new VolumeError("internal", `${path} names no Pool: expected kind btrfs or zfs`);
}

/** Records the binding, durably. */
export async function writePoolBinding(dataDir: string, binding: PoolBinding): Promise<void> {
  await writeFileAtomic(join(dataDir, FILE), JSON.stringify(binding, null, 2) + "\n", { mode: 0o600 });
}

/** Opens the bound Pool: attaches a btrfs loop file first when the binding has one and it is not mounted. */
export async function openBoundPool(binding: PoolBinding, exec: Exec): Promise<Pool> {
  if (binding.kind === "zfs") return zfsPool(binding.dataset, binding.mountRoot, exec);
  if (binding.loop !== undefined) {
    await attachLoopPool(exec, { ...binding.loop, mountPoint: binding.root });
  }
  return await openBtrfsPool(binding.root, exec);
}
