/**
 * Volumes: the Pool a Machine keeps Provisioned Volumes in (btrfs subvolumes with qgroup limits, or ZFS datasets
 * with `refquota`), behind one small interface — create with a size, snapshot, list, send full or incremental,
 * receive, promote a received copy to writable, demote, destroy, usage — and SetVolumeCopy's transition table,
 * the pure rule each Machine applies to a Volume Run's requests against its own copy and gen floor
 * (docs/bets.md: "Expected copies", "One lease, one fence").
 *
 * @module
 */

export { VolumeError } from "./errors.ts";
export { type Exec, type ExecRunOptions, type ExecStream, hostExec } from "./exec.ts";
export { checkVolumeName } from "./names.ts";
export type { Pool, PoolKind, PoolSpace, PoolVolume, SendStream, VolumeUsage } from "./pool.ts";
export { openBtrfsPool } from "./btrfs.ts";
export {
  btrfsPoolRoot,
  openBoundPool,
  type PoolBinding,
  readPoolBinding,
  writePoolBinding,
} from "./binding.ts";
export { attachLoopPool, detachLoopPool, loopDevicesOf, type LoopPool } from "./loop.ts";
export {
  type Copy,
  copyAfter,
  type CopyDecision,
  type CopyRequest,
  type CopyStep,
  decideCopy,
  floorAfter,
  type RefusalReason,
} from "./copy.ts";
