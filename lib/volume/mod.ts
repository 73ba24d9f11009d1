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
export { DEFAULT_TIMEOUT_MS, type Exec, type ExecRunOptions, type ExecStream, hostExec } from "./exec.ts";
export {
  checkSize,
  checkSnapshotName,
  checkVolumeName,
  MAX_VOLUME_BYTES,
  MIN_VOLUME_BYTES,
} from "./names.ts";
export type { Pool, PoolKind, PoolSpace, PoolVolume, SendStream, VolumeUsage } from "./pool.ts";
export { btrfsPool, openBtrfsPool, parseFilesystemUsage, parseQgroup, parseSubvolumeList } from "./btrfs.ts";
export { zfsPool } from "./zfs.ts";
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
  copyProblem,
  type CopyRequest,
  type CopyStep,
  decideCopy,
  describeCopy,
  floorAfter,
  type RefusalReason,
  sameCopy,
} from "./copy.ts";
