/**
 * Leaving the proxies before a client stops a container (docs/bets.md, bet 9): the owning Machine marks its own
 * container's row `stopping` (`ployz.container.leave.v1`); every Machine's serving loop leaves a marked row out of its
 * DNS and Caddy projections, and once both loaded without it writes a leave ack, its own row keyed
 * `leave:<container id>`. The client then stops the container once every Machine not Down acked, or its patience
 * ran out (the Outcome says which). Pure, but for {@link leaveStatus}, which reads a Machine's copy of the store.
 *
 * @module
 */

import type { Ack, Container, Store } from "../store/mod.ts";
import { markedStopping } from "./labels.ts";

/** The prefix of a leave ack's pointer; never the key of a Serving Pointer or a removal mark. */
export const LEAVE_ACK_PREFIX = "leave:";

/** The ack pointer that says a Machine's proxies dropped container `id`. */
export function leaveAckPointer(id: string): string {
  return `${LEAVE_ACK_PREFIX}${id}`;
}

const LIVE = new Set(["running", "restarting", "paused"]);

/** The leave acks this Machine should write after a loaded projection left out every live marked row. */
export function leaveAcksToWrite(
  machineId: string,
  containers: readonly Container[],
  current: readonly Ack[],
  now: Date,
): Ack[] {
  const out: Ack[] = [];
  for (const row of containers) {
    if (!markedStopping(row) || !LIVE.has(row.state ?? "")) continue;
    const pointer = leaveAckPointer(row.id);
    if (current.some((a) => a.machine_id === machineId && a.pointer === pointer)) continue;
    out.push({ "machine_id": machineId, pointer, deployment: row.id, "acked_at": now.toISOString() });
  }
  return out;
}

/** Keys of this Machine's leave acks whose container is gone or no longer marked: deleted, so acks do not pile up. */
export function staleLeaveAcks(
  machineId: string,
  containers: readonly Container[],
  current: readonly Ack[],
): string[] {
  const marked = new Set(containers.filter(markedStopping).map((r) => r.id));
  return current.filter((a) =>
    a.machine_id === machineId && a.pointer.startsWith(LEAVE_ACK_PREFIX) &&
    !marked.has(a.pointer.slice(LEAVE_ACK_PREFIX.length))
  ).map((a) => `${a.machine_id}/${a.pointer}`);
}

/** Which Machines (not in `down`) acked that container `id` left their proxies, and which did not yet. */
export function leaveStatus(
  store: Store,
  id: string,
  down: ReadonlySet<string> = new Set(),
): { acked: string[]; missing: string[] } {
  const pointer = leaveAckPointer(id);
  const acked = new Set(store.acks.list({ pointer }).map((a) => a.machine_id));
  const machines = store.liveMachines().map((m) => m.id).filter((m) => !down.has(m)).sort();
  return { acked: machines.filter((m) => acked.has(m)), missing: machines.filter((m) => !acked.has(m)) };
}
