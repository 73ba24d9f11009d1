/**
 * The retire loop's decision (docs/bets.md, bet 3), pure: which of this Machine's own containers a Serving Pointer
 * superseded may stop now. A container is superseded when its Service has a pointer naming another Deployment
 * that the pointer lists as superseded (see `supersededOf`; a pointer without the list supersedes every other).
 * It may stop once every Machine not Down has acked the pointer (same Deployment, and same version when the
 * pointer carries one), or once `retireAfterMs` passed since this Machine first saw it superseded. Everything is
 * re-derived from rows on each pass; only the first-seen times live in memory, so a restart starts the bound
 * again and never loses a container.
 *
 * @module
 */

import type { Ack, Container, ServingPointer } from "../store/mod.ts";
import { serviceKey, supersededOf } from "./serving_set.ts";

/** Default bound before superseded containers stop without every ack: 300 s. */
export const DEFAULT_RETIRE_AFTER_MS = 300_000;

/** `PLOYZ_RETIRE_AFTER_SECONDS` in milliseconds, else {@link DEFAULT_RETIRE_AFTER_MS}. */
export function retireAfterMsFromEnv(
  env: (name: string) => string | undefined = (n) => Deno.env.get(n),
): number {
  const text = env("PLOYZ_RETIRE_AFTER_SECONDS");
  const seconds = text === undefined ? NaN : Number(text);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : DEFAULT_RETIRE_AFTER_MS;
}

/** What one pass decides from. */
export interface RetireInput {
  /** This Machine's id. */
  machineId: string;
  /** Now, in milliseconds. */
  nowMs: number;
  /** Container rows (only this Machine's are considered). */
  containers: readonly Container[];
  /** Serving Pointers. */
  pointers: readonly ServingPointer[];
  /** Ack rows. */
  acks: readonly Ack[];
  /** Machines in the Cluster (ids). */
  machines: readonly string[];
  /** Machines this Machine observes as Down. */
  down: ReadonlySet<string>;
  /** When each container was first seen superseded (container id → ms); updated in place. */
  firstSeen: Map<string, number>;
  /** The bound; default {@link DEFAULT_RETIRE_AFTER_MS}. */
  retireAfterMs?: number;
}

/** One superseded container and its verdict. */
export interface RetireItem {
  /** Container id. */
  containerId: string;
  /** Container name. */
  name: string;
  /** Pointer key. */
  pointer: string;
  /** The Deployment the pointer names. */
  deployment: string;
  /** `acked`: every Machine not Down acked; `bound`: the bound passed. */
  reason?: "acked" | "bound";
  /** Machines not Down whose ack is missing. */
  missing: string[];
  /** When the bound passes. */
  dueAtMs: number;
}

/** The verdict of one pass. */
export interface RetireDecision {
  /** Stop these now. */
  retire: RetireItem[];
  /** Still waiting. */
  waiting: RetireItem[];
}

const LIVE = new Set(["running", "restarting", "paused"]);

/** Decides which own superseded containers stop now. Forgets first-seen times of containers no longer superseded. */
export function retireDecision(input: RetireInput): RetireDecision {
  const bound = input.retireAfterMs ?? DEFAULT_RETIRE_AFTER_MS;
  const pointers = new Map(input.pointers.map((p) => [serviceKey(p.project, p.service), p]));
  const retire: RetireItem[] = [];
  const waiting: RetireItem[] = [];
  const seen = new Set<string>();
  for (const row of input.containers) {
    if (row.machine_id !== input.machineId) continue;
    if (!LIVE.has(row.state ?? "")) continue;
    if (row.slot === "hook") continue;
    const key = serviceKey(row.project, row.service);
    const pointer = pointers.get(key);
    if (pointer === undefined || row.deployment === pointer.deployment) continue;
    // A newer Deploy's containers, not pointed at yet, are not superseded.
    const superseded = supersededOf(pointer);
    if (superseded !== undefined && !superseded.includes(row.deployment ?? "")) continue;
    seen.add(row.id);
    let first = input.firstSeen.get(row.id);
    if (first === undefined) {
      first = input.nowMs;
      input.firstSeen.set(row.id, first);
    }
    const missing = input.machines.filter((m) => !input.down.has(m) && !acked(input.acks, m, key, pointer))
      .sort();
    const item: RetireItem = {
      containerId: row.id,
      name: row.name,
      pointer: key,
      deployment: pointer.deployment,
      missing,
      dueAtMs: first + bound,
    };
    if (missing.length === 0) retire.push({ ...item, reason: "acked" });
    else if (input.nowMs >= first + bound) retire.push({ ...item, reason: "bound" });
    else waiting.push(item);
  }
  for (const id of [...input.firstSeen.keys()]) if (!seen.has(id)) input.firstSeen.delete(id);
  return { retire, waiting };
}

function acked(acks: readonly Ack[], machineId: string, key: string, pointer: ServingPointer): boolean {
  return acks.some((a) =>
    a.machine_id === machineId && a.pointer === key && a.deployment === pointer.deployment &&
    (pointer.version === undefined || a.version === pointer.version)
  );
}
