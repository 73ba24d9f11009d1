// Every Volume and Snapshot name becomes a path (btrfs) or a dataset name (ZFS), so both are checked before any
// command is built: a name can never climb out of the Pool or be read as a command-line option.
import { VolumeError } from "./errors.ts";

const NAME = /^[a-z0-9][a-z0-9_.-]{0,127}$/;

function checkName(name: string, field: string, what: string): string {
  if (typeof name !== "string" || !NAME.test(name) || name.includes("..")) {
    throw new VolumeError(
      "invalid_argument",
      `${field} "${
        String(name).slice(0, 140)
      }" is not a ${what} name: use 1-128 of a-z 0-9 _ . - starting with a letter or digit`,
      { details: { field } },
    );
  }
  return name;
}

/** Returns `name` when it may name a Volume in a Pool, else throws `invalid_argument` naming the field and value. */
export function checkVolumeName(name: string, field = "volume"): string {
  return checkName(name, field, "Volume");
}

/** Returns `name` when it may name a Snapshot, else throws `invalid_argument` naming the field and value. */
export function checkSnapshotName(name: string, field = "snapshot"): string {
  return checkName(name, field, "Snapshot");
}

/** Throws `invalid_argument` when `sizeBytes` is below what Volume `volume` uses now. */
export function checkNotBelowUsage(volume: string, sizeBytes: number, usedBytes: number): void {
  if (sizeBytes < usedBytes) {
    throw new VolumeError(
      "invalid_argument",
      `size ${sizeBytes} bytes is below what Volume "${volume}" uses (${usedBytes} bytes)`,
    );
  }
}

/** The largest Volume size accepted (1 PiB): bounds what a request can ask a Pool to promise. */
export const MAX_VOLUME_BYTES: number = 2 ** 50;
/** The smallest Volume size accepted (1 MiB): btrfs and ZFS need room for their own metadata. */
export const MIN_VOLUME_BYTES: number = 2 ** 20;

/** Returns `bytes` when it is a whole size in [1 MiB, 1 PiB], else throws `invalid_argument`. */
export function checkSize(bytes: number, field = "size"): number {
  if (!Number.isSafeInteger(bytes) || bytes < MIN_VOLUME_BYTES || bytes > MAX_VOLUME_BYTES) {
    throw new VolumeError(
      "invalid_argument",
      `${field} ${bytes} bytes is out of range: a Volume is between 1 MiB and 1 PiB`,
      { details: { field } },
    );
  }
  return bytes;
}
