/**
 * The Machine-side handlers of `ployz.removal.mark.v1` and `ployz.removal.list.v1`, over this Machine's copy of the
 * store. Marking is a name-keyed write: the last writer wins, and losing is silent (docs/bets.md, bet 5).
 *
 * @module
 */

import type { MarkRemovalRequest } from "../rpc/mod.ts";
import type { Removal, Store } from "../store/mod.ts";
import { CodedError } from "../util/mod.ts";
import { coveringRemoval, removalAckPointer, removalKey, WHOLE_PROJECT } from "./removal.ts";

/** How many Deployments one mark lists. */
const MAX_DEPLOYMENTS = 1024;

/**
 * Marks `project` (or one Service) removed, or cancels the mark. An active mark lists the Deployments the caller
 * names plus those of the containers this Machine's copy holds for it now, so a Machine's containers the caller did
 * not observe are covered too; a newer Deploy's are never. Cancelling a mark that does not exist is `not_found`.
 */
export function markRemoval(
  store: Store,
  request: MarkRemovalRequest,
): { removal: Removal; previous?: Removal } {
  const service = request.service ?? WHOLE_PROJECT;
  const key = removalKey(request.project, service);
  const previous = store.removals.get(key);
  if (request.state === "cancelled") {
    if (previous === undefined || previous.state !== "active") {
      throw new CodedError("not_found", `No active removal of "${key}" to cancel`, {
        details: { removal: key },
      });
    }
    const removal: Removal = { ...previous, state: "cancelled", "cancelled_at": new Date().toISOString() };
    store.removals.put(removal);
    return { removal, previous };
  }
  const seen = store.liveContainers({ project: request.project }).filter((r) =>
    (service === WHOLE_PROJECT || r.service === service) && typeof r.deployment === "string"
  ).map((r) => r.deployment as string);
  const deployments = [...new Set([...request.deployments, ...seen])].slice(0, MAX_DEPLOYMENTS);
  const removal: Removal = {
    project: request.project,
    service,
    id: request.id,
    deployments,
    state: "active",
    "created_at": new Date().toISOString(),
    ...(request.ack_from === undefined ? {} : { "ack_from": request.ack_from }),
    ...(request.volumes === undefined || request.volumes.length === 0 ? {} : { volumes: request.volumes }),
  };
  store.removals.put(removal);
  return previous === undefined ? { removal } : { removal, previous };
}

/** One mark as this Machine's copy shows it: who acked it, and which covered containers its rows still hold. */
export interface RemovalView {
  /** The mark. */
  removal: Removal;
  /** Machines whose ack of this mark this copy holds. */
  acked: string[];
  /** Covered container rows still present, by owning Machine. */
  remaining: { "machine_id": string; id: string; name: string; state: string }[];
  /** Named volumes a Machine could not remove for this mark, as its ack says (empty when none). */
  "volume_errors": { "machine_id": string; error: string }[];
}

/** At most this many volume errors are kept in one Machine's ack, each at most this long. */
const MAX_VOLUME_ERRORS = 16;
const MAX_VOLUME_ERROR_CHARS = 300;

/**
 * Records on this Machine's own ack of `mark` that removing one of its volumes failed, so `ployz rm --status` on any
 * Machine shows it (the ack is this Machine's row; nothing else writes it). Bounded; an ack not written yet is
 * written with it.
 */
export function noteVolumeError(store: Store, machineId: string, mark: Removal, error: string): void {
  const pointer = removalAckPointer(mark);
  const have = store.acks.list().find((a) => a.machine_id === machineId && a.pointer === pointer);
  const base = have?.deployment === mark.id
    ? have
    : { "machine_id": machineId, pointer, deployment: mark.id, "acked_at": new Date().toISOString() };
  const before = volumeErrorsOf(base);
  if (before.length >= MAX_VOLUME_ERRORS) return;
  store.acks.put({ ...base, "volume_errors": [...before, error.slice(0, MAX_VOLUME_ERROR_CHARS)] });
}

// Another Machine's ack is untrusted input: only strings are read, bounded.
function volumeErrorsOf(ack: Record<string, unknown>): string[] {
  const list = ack["volume_errors"];
  return Array.isArray(list)
    ? list.filter((e): e is string => typeof e === "string").slice(0, MAX_VOLUME_ERRORS)
      .map((e) => e.slice(0, MAX_VOLUME_ERROR_CHARS))
    : [];
}

/** Every mark (of `project`, when given) with this Machine's view of its progress, never the Cluster's truth. */
export function listRemovals(store: Store, request: { project?: string }): RemovalView[] {
  const marks = store.removals.list().filter((m) =>
    request.project === undefined || m.project === request.project
  );
  const acks = store.acks.list();
  const containers = store.liveContainers();
  return marks.map((removal) => {
    const pointer = removalAckPointer(removal);
    const active = { ...removal, state: "active" };
    const mine = acks.filter((a) => a.pointer === pointer && a.deployment === removal.id);
    return {
      removal,
      acked: mine.map((a) => a.machine_id).sort(),
      "volume_errors": mine.flatMap((a) =>
        volumeErrorsOf(a).map((error) => ({ "machine_id": a.machine_id, error }))
      )
        .sort((x, y) => x.machine_id < y.machine_id ? -1 : x.machine_id > y.machine_id ? 1 : 0),
      remaining: containers.filter((r) => coveringRemoval(r, [active]) !== undefined).map((r) => ({
        "machine_id": r.machine_id,
        id: r.id,
        name: r.name,
        state: r.state ?? "unknown",
      })),
    };
  }).sort((a, b) =>
    removalKey(a.removal.project, a.removal.service) < removalKey(b.removal.project, b.removal.service)
      ? -1
      : 1
  );
}
