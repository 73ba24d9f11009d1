/**
 * Removal marks (`ployz rm`), pure: which containers a mark covers, which of this Machine's own ones may go now, and
 * the acks that say a Machine's proxies dropped them.
 *
 * Why the mark is a replicated, name-keyed row each Machine honours for its own containers (and not a record in the
 * operator's Config Store admitted by a `due()` on later commands): a Machine that was unreachable during `rm` must
 * finish the removal when it is next reachable, with no later command and no timer on the operator's side. The row
 * reaches it with the next sync, and its own serving loop — which already re-derives everything from rows and Docker
 * on each pass — removes its own covered containers. Nothing is retried on a timer: a pass acts on new rows (the
 * mark, an ack) or on Docker's state, and a container that cannot be removed is logged and tried again only on the
 * next pass that has something new (a row change) or the loop's tick, exactly as the retire loop does.
 *
 * A mark lists the Deployments it removes (those its writer knew), so a newer Deploy of the same Project is never
 * covered and the mark can stay as a record. Every Machine leaves covered containers out of its DNS and Caddy
 * projections at once; the owning Machine stops and removes a live one once every Machine the operator reached
 * (`ack_from`) and not Down acked the mark, or the retire bound passed; one at rest is removed at once.
 *
 * @module
 */

import type { Ack, Container, Removal } from "../store/mod.ts";
import { INGRESS_PROJECT } from "./ingress_spec.ts";

/** The service of a mark that removes every Service of its Project. */
export const WHOLE_PROJECT = "*";

/** The key of a mark: `project/service`, or `project/*` for a whole Project. */
export function removalKey(project: string, service?: string): string {
  return `${project}/${service ?? WHOLE_PROJECT}`;
}

/** The ack pointer of a mark: `rm:project/service`, never the key of a Serving Pointer. */
export function removalAckPointer(mark: Pick<Removal, "project" | "service">): string {
  return `rm:${mark.project}/${mark.service}`;
}

/** Whether a mark is active and well formed (rows from other Machines are untrusted). */
export function activeRemoval(mark: Removal): boolean {
  return mark.state === "active" && Array.isArray(mark.deployments) && mark.project !== INGRESS_PROJECT;
}

/**
 * A mark's volumes split into those it may remove and those it names outside its own Project. A mark comes from
 * another Machine: it may only remove its Project's volumes, which Ployz names `<project>_<volume>`.
 */
export function markVolumes(mark: Removal): { own: string[]; refused: string[] } {
  const names = Array.isArray(mark.volumes) ? mark.volumes.filter((v) => typeof v === "string") : [];
  const prefix = `${mark.project}_`;
  return {
    own: names.filter((v) => v.startsWith(prefix) && v.length > prefix.length),
    refused: names.filter((v) => !v.startsWith(prefix) || v.length === prefix.length),
  };
}

/** The active mark covering `row`, if any. The Ingress Proxy is never covered. */
export function coveringRemoval(row: Container, marks: readonly Removal[]): Removal | undefined {
  if (row.project === INGRESS_PROJECT || typeof row.deployment !== "string") return undefined;
  return marks.find((m) =>
    activeRemoval(m) && m.project === row.project &&
    (m.service === WHOLE_PROJECT || m.service === row.service) && m.deployments.includes(row.deployment!)
  );
}

/** What one pass decides from. */
export interface RemovalInput {
  /** This Machine's id. */
  machineId: string;
  /** Now, in milliseconds. */
  nowMs: number;
  /** Container rows. */
  containers: readonly Container[];
  /** Removal marks. */
  removals: readonly Removal[];
  /** Ack rows. */
  acks: readonly Ack[];
  /** Machines in the Cluster (ids). */
  machines: readonly string[];
  /** Machines this Machine observes as Down. */
  down: ReadonlySet<string>;
  /** When each live covered container was first seen covered (id → ms); updated in place. */
  firstSeen: Map<string, number>;
  /** How long a live container waits for missing acks; the retire bound. */
  boundMs: number;
}

/** One of this Machine's covered containers and its verdict. */
export interface RemovalItem {
  /** Container id. */
  containerId: string;
  /** Container name. */
  name: string;
  /** The mark's key. */
  removal: string;
  /** Whether it still runs (it must leave the proxies and stop first). */
  live: boolean;
  /** `at_rest`: nothing to stop; `acked`: every Machine waited for acked; `bound`: the bound passed. */
  reason?: "at_rest" | "acked" | "bound";
  /** Machines waited for whose ack is missing. */
  missing: string[];
  /** When the bound passes. */
  dueAtMs: number;
}

/** The verdict of one pass. */
export interface RemovalDecision {
  /** Every covered container id, on any Machine: left out of every projection. */
  leaving: Set<string>;
  /** This Machine's containers to stop (when live) and remove now. */
  remove: RemovalItem[];
  /** This Machine's live containers still waiting for acks. */
  waiting: RemovalItem[];
}

const LIVE = new Set(["running", "restarting", "paused"]);

/** Decides which own covered containers go now. Forgets first-seen times of containers no longer covered. */
export function removalDecision(input: RemovalInput): RemovalDecision {
  const marks = input.removals.filter(activeRemoval);
  const leaving = new Set<string>();
  const remove: RemovalItem[] = [];
  const waiting: RemovalItem[] = [];
  const seen = new Set<string>();
  if (marks.length === 0) {
    input.firstSeen.clear();
    return { leaving, remove, waiting };
  }
  for (const row of input.containers) {
    const mark = coveringRemoval(row, marks);
    if (mark === undefined) continue;
    leaving.add(row.id);
    if (row.machine_id !== input.machineId) continue;
    const live = LIVE.has(row.state ?? "");
    const key = removalKey(mark.project, mark.service);
    if (!live) {
      remove.push({
        containerId: row.id,
        name: row.name,
        removal: key,
        live,
        reason: "at_rest",
        missing: [],
        dueAtMs: 0,
      });
      continue;
    }
    seen.add(row.id);
    let first = input.firstSeen.get(row.id);
    if (first === undefined) {
      first = input.nowMs;
      input.firstSeen.set(row.id, first);
    }
    const pointer = removalAckPointer(mark);
    const from = Array.isArray(mark.ack_from)
      ? (mark.ack_from as unknown[]).filter((m): m is string => typeof m === "string")
      : input.machines;
    const missing = from.filter((m) =>
      input.machines.includes(m) && !input.down.has(m) &&
      !input.acks.some((a) => a.machine_id === m && a.pointer === pointer && a.deployment === mark.id)
    ).sort();
    const item: RemovalItem = {
      containerId: row.id,
      name: row.name,
      removal: key,
      live,
      missing,
      dueAtMs: first + input.boundMs,
    };
    if (missing.length === 0) remove.push({ ...item, reason: "acked" });
    else if (input.nowMs >= first + input.boundMs) remove.push({ ...item, reason: "bound" });
    else waiting.push(item);
  }
  for (const id of [...input.firstSeen.keys()]) if (!seen.has(id)) input.firstSeen.delete(id);
  return { leaving, remove, waiting };
}

/** The acks this Machine should write for the active marks a loaded projection honoured. Pure. */
export function removalAcksToWrite(
  machineId: string,
  removals: readonly Removal[],
  current: readonly Ack[],
  now: Date,
): Ack[] {
  const out: Ack[] = [];
  for (const mark of removals.filter(activeRemoval)) {
    const pointer = removalAckPointer(mark);
    const have = current.find((a) => a.machine_id === machineId && a.pointer === pointer);
    if (have?.deployment === mark.id) continue;
    out.push({ "machine_id": machineId, pointer, deployment: mark.id, "acked_at": now.toISOString() });
  }
  return out;
}
