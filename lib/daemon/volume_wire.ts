/**
 * The volume runtime's translations: a Volume copy to and from its RPC form, the `volumes` rows this Machine
 * publishes from its Pool, and Volume errors as RPC errors.
 *
 * @module
 */

import { type CopyWire, RpcError, type VolumeCopyWire } from "../rpc/mod.ts";
import type { Store, Volume } from "../store/mod.ts";
import { type Copy, VolumeError } from "../volume/mod.ts";

/** A Volume error as the RPC error of the same code; anything else as it is. */
export function asRpc(error: unknown): unknown {
  if (error instanceof VolumeError) {
    return new RpcError(error.code, error.message, { details: error.details, cause: error });
  }
  return error;
}

/** A copy's role on the wire. */
export function copyToWire(copy: Copy): CopyWire {
  return copy.role === "none"
    ? { role: "none" }
    : copy.role === "mirror"
    ? { role: "mirror", snapshot: copy.snapshot }
    : { role: "writer", epoch: copy.epoch };
}

/** A copy's role from the wire (a Writer without an epoch is at epoch 0). */
export function copyFromWire(wire: CopyWire): Copy {
  return wire.role === "none"
    ? { role: "none" }
    : wire.role === "mirror"
    ? { role: "mirror", snapshot: wire.snapshot! }
    : { role: "writer", epoch: wire.epoch ?? 0 };
}

/**
 * Writes this Machine's `volumes` rows from the copies its Pool holds now: a row changed in more than its
 * observation time is rewritten, a row of a copy no longer held is deleted.
 */
export function publishRows(
  store: Store,
  machineId: string,
  copies: readonly VolumeCopyWire[],
  observedAt: string,
): void {
  const seen = new Set<string>();
  for (const copy of copies) {
    const row: Volume = {
      id: `${copy.name}@${machineId}`,
      "machine_id": machineId,
      name: copy.name,
      state: copy.role,
      ...(copy.project === undefined ? {} : { project: copy.project }),
      ...(copy.size_bytes === undefined ? {} : { "size_bytes": copy.size_bytes }),
      ...(copy.used_bytes === undefined ? {} : { "used_bytes": copy.used_bytes }),
      ...(copy.epoch === undefined ? {} : { epoch: copy.epoch }),
      ...(copy.snapshot === undefined ? {} : { snapshot: copy.snapshot }),
      // A Writer keeps its newest two run Snapshots; the row names them.
      snapshots: copy.snapshots.slice(-2),
      "observed_at": observedAt,
    };
    seen.add(row.id);
    const current = store.volumes.get(row.id);
    const { observed_at: _a, ...a } = current ?? {};
    const { observed_at: _b, ...b } = row;
    if (current === undefined || JSON.stringify(a) !== JSON.stringify(b)) store.volumes.put(row);
  }
  for (const row of store.volumes.list({ "machine_id": machineId })) {
    if (!seen.has(row.id)) store.volumes.delete(row.id);
  }
}
