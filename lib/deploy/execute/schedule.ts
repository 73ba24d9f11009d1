/**
 * Which operations of a plan may run at the same time. The plan is ordered; this derives, for each operation, the
 * earlier operations it must wait for, keeping every order the plan's sequence means:
 *
 * - Services in dependency order: every operation of a Service waits for every operation of the Service before
 *   it in the plan (`depends_on` is honoured, conservatively, for Services that do not depend on each other too),
 *   with one exception: when the earlier Service only creates containers (no older Deployment serves in their
 *   place), a create waits for them only until they passed their healthchecks (as Compose's `service_healthy`), not
 *   through their monitor period, nor for that Service's Serving Pointer move (which still comes before the later
 *   Service's own move, and only after each of its creates passed the whole gate).
 * - Within a Service: its hook, Serving Pointer move and Ingress Proxy fill wait for everything before them and
 *   hold back everything after; an image copy or pull runs before the later operations on its Machine; replacements run
 *   one after another (a rolling update, stop-first or start-first, never takes two slots down at once); creates
 *   and starts on different slots run side by side; removals wait until the Service's changes are done.
 *
 * With every operation waiting for the one before it, the plan runs exactly as it did strictly in order.
 *
 * @module
 */

import type { Op } from "../plan/types.ts";

const CHANGE = new Set<Op["kind"]>(["create", "start", "replace", "image", "pull", "hook"]);
const SIDE_BY_SIDE = new Set<Op["kind"]>(["create", "start", "replace", "image", "pull", "stop", "remove"]);

function serviceKey(op: Op): string {
  return `${op.project}/${op.service}`;
}

/** What one operation waits for: earlier operations by index. */
export interface Waits {
  /** Operations that must be done. */
  done: number[];
  /** Creates that need only have passed their healthcheck (their monitor period may still run). */
  healthy: number[];
}

/** For each operation (by index), the indices of the earlier operations it waits for, done or healthy. */
export function dependencies(ops: readonly Op[]): number[][] {
  return schedule(ops).map((w) => [...w.done, ...w.healthy].sort((a, b) => a - b));
}

/** For each operation (by index), what it waits for. */
export function schedule(ops: readonly Op[]): Waits[] {
  const deps: Waits[] = [];
  let previousSegment: number[] = [];
  let segment: number[] = [];
  let key: string | undefined;
  let barrier: number | undefined;
  let lastReplace: number | undefined;
  let changed = false;
  const images = new Map<string, number[]>();
  for (const [i, op] of ops.entries()) {
    if (serviceKey(op) !== key) {
      if (segment.length > 0) previousSegment = segment;
      segment = [];
      key = serviceKey(op);
      barrier = undefined;
      lastReplace = undefined;
      changed = false;
      images.clear();
    }
    const wait = new Set<number>();
    const healthy: number[] = [];
    // A Service that only creates has no older Deployment serving in its place: its containers serve once live,
    // whether or not its pointer moved yet.
    const fresh = op.kind === "create" &&
      previousSegment.every((j) => ops[j].kind === "create" || ops[j].kind === "point");
    for (const j of previousSegment) {
      if (fresh && ops[j].kind === "create") healthy.push(j);
      else if (!fresh || ops[j].kind !== "point") wait.add(j);
    }
    const removal = op.kind === "stop" || op.kind === "remove";
    if (!SIDE_BY_SIDE.has(op.kind) || (removal && changed)) {
      for (const j of segment) wait.add(j);
    } else {
      if (barrier !== undefined) wait.add(barrier);
      for (const j of images.get(op.machineId) ?? []) wait.add(j);
      if (op.kind === "replace" && lastReplace !== undefined) wait.add(lastReplace);
    }
    deps.push({ done: [...wait].sort((a, b) => a - b), healthy });
    segment.push(i);
    if (!SIDE_BY_SIDE.has(op.kind)) barrier = i;
    if (op.kind === "replace") lastReplace = i;
    if (op.kind === "image" || op.kind === "pull") {
      images.set(op.machineId, [...(images.get(op.machineId) ?? []), i]);
    }
    if (CHANGE.has(op.kind)) changed = true;
  }
  return deps;
}
