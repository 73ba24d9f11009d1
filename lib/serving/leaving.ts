/**
 * Leaving the proxies before a client stops a container (docs/bets.md, bet 9): the owning Machine marks its own
 * container's row `stopping` (`ployz.container.leave.v1`); every Machine's serving loop leaves a marked row out of its
 * DNS and Caddy projections, and once both loaded without it writes a leave ack, its own row keyed
 * `leave:<container id>`. The client then stops the container once every Machine not Down acked, or its patience
 * ran out (the Outcome says which). Pure, but for {@link leaveStatus}, which reads a Machine's copy of the store.
 *
 * A marked row is held, still serving on this Machine and not acked, while it is the last thing its Service serves
 * here and another container of the Service is on its way (running, its healthcheck not passed yet in this
 * Machine's copy of the rows): the last old container of a stop-first redeploy leaves only once this Machine sees a
 * new one healthy, rather than leaving its proxy with nothing to send requests to while the rows travel. A hold lasts
 * at most {@link LEAVE_HOLD_MS} from when this Machine first saw the mark, within the client's 10 s patience.
 *
 * @module
 */

import type { Ack, Container, ServingPointer, Store } from "../store/mod.ts";
import { markedStopping } from "./labels.ts";
import { servingGroups } from "./serving_set.ts";

/** The prefix of a leave ack's pointer; never the key of a Serving Pointer or a removal mark. */
export const LEAVE_ACK_PREFIX = "leave:";

/** The ack pointer that says a Machine's proxies dropped container `id`. */
export function leaveAckPointer(id: string): string {
  return `${LEAVE_ACK_PREFIX}${id}`;
}

const LIVE = new Set(["running", "restarting", "paused"]);

/** The longest a Machine holds a marked row serving while its replacement is on its way. */
export const LEAVE_HOLD_MS = 8_000;

/** What {@link heldLeaving} judges. */
export interface HoldInput {
  /** Every row, as this Machine sees them. */
  containers: readonly Container[];
  /** Serving Pointers. */
  pointers: readonly ServingPointer[];
  /** Rows this Machine's own memory takes out (retired, removal): never held. */
  stopping: ReadonlySet<string>;
  /** When this Machine first saw each marked row (ms); updated here, entries of unmarked rows dropped. */
  firstSeen: Map<string, number>;
  /** Now (ms). */
  nowMs: number;
  /** Bound of a hold; default {@link LEAVE_HOLD_MS}. */
  holdMs?: number;
}

/** The marked rows this Machine keeps serving for now (see the module doc). */
export function heldLeaving(input: HoldInput): Set<string> {
  const { containers, firstSeen, nowMs } = input;
  const holdMs = input.holdMs ?? LEAVE_HOLD_MS;
  const marked = containers.filter((r) => markedStopping(r) && LIVE.has(r.state ?? ""));
  const markedIds = new Set(marked.map((r) => r.id));
  for (const id of [...firstSeen.keys()]) if (!markedIds.has(id)) firstSeen.delete(id);
  for (const r of marked) if (!firstSeen.has(r.id)) firstSeen.set(r.id, nowMs);
  const held = new Set<string>();
  const groups = servingGroups(input.containers, input.pointers, { stopping: input.stopping });
  for (const group of groups) {
    if (group.serving.length > 0) continue;
    const coming = group.containers.some((r) =>
      !markedStopping(r) && !input.stopping.has(r.id) && r.state === "running" && r.health === "starting" &&
      r.slot !== "hook"
    );
    if (!coming) continue;
    for (const r of group.containers) {
      if (!markedIds.has(r.id) || input.stopping.has(r.id)) continue;
      if (nowMs - (firstSeen.get(r.id) ?? nowMs) < holdMs) held.add(r.id);
    }
  }
  return held;
}

/**
 * The leave acks this Machine should write after a loaded projection left out every live marked row but the
 * `held` ones, which are not acked until they leave.
 */
export function leaveAcksToWrite(
  machineId: string,
  containers: readonly Container[],
  current: readonly Ack[],
  now: Date,
  held: ReadonlySet<string> = new Set(),
): Ack[] {
  const out: Ack[] = [];
  for (const row of containers) {
    if (!markedStopping(row) || !LIVE.has(row.state ?? "") || held.has(row.id)) continue;
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
