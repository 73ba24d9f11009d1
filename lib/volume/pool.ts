// The one small interface every Pool backend implements. A Volume in a Pool is either writable (a Writer's data,
// mounted into its Container) or only a list of read-only Snapshots (a Mirror); Snapshots move between Pools as
// send streams, full or incremental from a base both sides hold.

/** The Pool backends. */
export type PoolKind = "btrfs" | "zfs";

/** Where a Volume stands in this Pool. */
export interface PoolVolume {
  /** The Volume's name in the Pool. */
  name: string;
  /** Whether a writable copy exists (the data a Writer's Container mounts). */
  writable: boolean;
  /** Read-only Snapshots, oldest first. */
  snapshots: string[];
}

/** Space a Volume uses and may use. */
export interface VolumeUsage {
  /** Bytes referenced by the writable copy (or the newest Snapshot of a Mirror). */
  usedBytes: number;
  /** The size limit, or undefined when none is set. */
  sizeBytes: number | undefined;
  /**
   * Bytes written to the writable copy since its newest Snapshot (btrfs: the qgroup's exclusive bytes; ZFS:
   * `written`): what an incremental send from that Snapshot carries, give or take its metadata. Undefined for a
   * Mirror.
   */
  changedBytes?: number;
}

/** Space of the whole Pool. */
export interface PoolSpace {
  /** Bytes the Pool holds in all. */
  totalBytes: number;
  /** Bytes still free for new data. */
  freeBytes: number;
}

/** A send in progress: the stream to hand to a receiving Pool and how the sending program ended. */
export interface SendStream {
  /** The send stream. */
  output: ReadableStream<Uint8Array>;
  /** Settles when the sender exited; rejects when it failed. */
  done: Promise<void>;
}

/** A copy-on-write Pool holding Provisioned Volumes. */
export interface Pool {
  /** Which backend. */
  readonly kind: PoolKind;
  /** What the Pool is on (a mount point, a ZFS dataset), for messages and `ployz machine pool`. */
  readonly where: string;
  /** Creates an empty writable Volume limited to `sizeBytes`; `conflict` when it exists. */
  create(volume: string, sizeBytes: number): Promise<void>;
  /** The host path a Container binds for the writable Volume. */
  mountPath(volume: string): string;
  /** Takes a read-only Snapshot of the writable Volume. */
  snapshot(volume: string, snapshot: string): Promise<void>;
  /** The Volume's state, or undefined when the Pool holds nothing of it. */
  inspect(volume: string): Promise<PoolVolume | undefined>;
  /** Every Volume the Pool holds something of, by name. */
  list(): Promise<string[]>;
  /** Streams `snapshot`, incrementally from `base` when given (the receiver must hold `base`). */
  send(volume: string, snapshot: string, base?: string, signal?: AbortSignal): SendStream;
  /**
   * Receives a send stream as a read-only Snapshot named `snapshot` (the sender's name). A failed or corrupt
   * stream leaves nothing behind.
   */
  receive(
    volume: string,
    snapshot: string,
    input: ReadableStream<Uint8Array>,
    signal?: AbortSignal,
  ): Promise<void>;
  /** Makes the writable Volume a copy of `snapshot`, limited to `sizeBytes`, replacing any writable copy. */
  promote(volume: string, snapshot: string, sizeBytes: number): Promise<void>;
  /** Drops the writable copy and keeps the Snapshots (a Writer becoming a Mirror at its newest Snapshot). */
  demote(volume: string): Promise<void>;
  /** Destroys one Snapshot. */
  destroySnapshot(volume: string, snapshot: string): Promise<void>;
  /** Destroys the Volume: its writable copy and every Snapshot. Nothing to destroy is fine. */
  destroy(volume: string): Promise<void>;
  /** Changes the size limit; `invalid_argument` when below what the Volume uses. */
  resize(volume: string, sizeBytes: number): Promise<void>;
  /** The Volume's usage and limit. */
  usage(volume: string): Promise<VolumeUsage>;
  /** The Pool's total and free space. */
  space(): Promise<PoolSpace>;
}
