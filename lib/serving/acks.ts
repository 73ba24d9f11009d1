/**
 * Acks: a Machine acks a Serving Pointer once both its DNS spec and its Caddy config (when it runs an Ingress
 * Proxy) have loaded a projection made with that pointer. The ack row is this Machine's own, keyed
 * `machine_id/project/service`, and is rewritten only when the pointer it acknowledges moved.
 *
 * @module
 */

import type { Ack, ServingPointer, Store } from "../store/mod.ts";
import { serviceKey } from "./serving_set.ts";

/** The ack rows this Machine should hold for the pointers a loaded projection honoured. Pure. */
export function acksToWrite(
  machineId: string,
  loaded: readonly ServingPointer[],
  current: readonly Ack[],
  now: Date,
): Ack[] {
  const out: Ack[] = [];
  for (const pointer of loaded) {
    const key = serviceKey(pointer.project, pointer.service);
    const have = current.find((a) => a.machine_id === machineId && a.pointer === key);
    if (have !== undefined && have.deployment === pointer.deployment && have.version === pointer.version) {
      continue;
    }
    const ack: Ack = {
      "machine_id": machineId,
      pointer: key,
      deployment: pointer.deployment,
      "acked_at": now.toISOString(),
    };
    if (pointer.version !== undefined) ack.version = pointer.version;
    out.push(ack);
  }
  return out;
}

/** Writes the acks {@link acksToWrite} names; returns how many were written. */
export function writeAcks(store: Store, loaded: readonly ServingPointer[], now: Date = new Date()): number {
  const rows = acksToWrite(store.siteId, loaded, store.acks.list(), now);
  for (const row of rows) store.acks.put(row);
  return rows.length;
}
