/**
 * Which operations of a plan may run at the same time. The plan is ordered; this derives, for each operation, the
 * earlier operations it must wait for, keeping every order the plan's sequence means:
 *
 * - Services in dependency order: every operation of a Service waits for every operation of each earlier Service it
 *   depends on (`depends_on`, directly or through another Service). Services with no `depends_on` path between
 *   them run side by side. Without the graph ({@linkcode ServiceGraph}), and for what is not one of the Project's
 *   Services (an obsolete Service's removals, the Ingress Proxy fill), an operation waits for every Service planned
 *   before it. One exception: when the Services waited for only create containers (no older Deployment serves in
 *   their place), a create waits for them only until they passed their healthchecks (as Compose's
 *   `service_healthy`), not through their monitor period, nor for their Serving Pointer moves (which still come
 *   before the later Service's own move, and only after each of their creates passed the whole gate).
 * - Within a Service: its hook, Serving Pointer move and Ingress Proxy fill wait for everything before them and
 *   hold back everything after; an image copy or pull runs before the later operations on its Machine;
 *   replacements run one after another (a rolling update, stop-first or start-first, never takes two slots
 *   down at once), or as many at once as the Service's `update_config.parallelism` says (each waits for the
 *   replacement that many places before it, and its `delay` after that one ended; 0: none waits); creates and
 *   starts on different slots run side by side; removals wait until the Service's changes are done.
 *
 * With every operation waiting for the one before it, the plan runs exactly as it did strictly in order.
 *
 * @module
 */

import type { Op } from "../plan/types.ts";

const CHANGE = new Set<Op["kind"]>(["create", "start", "replace", "image", "pull", "hook"]);
const SIDE_BY_SIDE = new Set<Op["kind"]>(["create", "start", "replace", "image", "pull", "stop", "remove"]);

/** The Project's Services and what each depends on (its `depends_on`), as the plan carries them. */
export interface ServiceGraph {
  /** The Project whose Services these are. */
  project: string;
  /** Each Service of the Deploy, with the Services it names in `depends_on`. */
  dependsOn: Readonly<Record<string, readonly string[]>>;
}

/** What one operation waits for: earlier operations by index. */
export interface Waits {
  /** Operations that must be done. */
  done: number[];
  /** Creates that need only have passed their healthcheck (their monitor period may still run). */
  healthy: number[];
  /** The replacement this one rolls after, if any: its `update_config.delay` counts from that one's end. */
  rollsAfter?: number;
}

/** One Service's run of consecutive operations in the plan. */
interface Segment {
  project: string;
  service: string;
  ops: number[];
}

/** For each operation (by index), the indices of the earlier operations it waits for, done or healthy. */
export function dependencies(ops: readonly Op[], graph?: ServiceGraph): number[][] {
  return schedule(ops, graph).map((w) => [...w.done, ...w.healthy].sort((a, b) => a - b));
}

/** Every Service `service` depends on, directly or through others. */
function closure(graph: ServiceGraph, service: string): Set<string> {
  const seen = new Set<string>();
  const todo = [...graph.dependsOn[service] ?? []];
  while (todo.length > 0) {
    const next = todo.pop()!;
    if (seen.has(next)) continue;
    seen.add(next);
    todo.push(...graph.dependsOn[next] ?? []);
  }
  return seen;
}

/** The operations of the earlier Segments the Segment starting with `op` must wait for. */
function waitedFor(op: Op, earlier: readonly Segment[], graph: ServiceGraph | undefined): number[] {
  const inGraph = (s: { project: string; service: string }): boolean =>
    graph !== undefined && s.project === graph.project && Object.hasOwn(graph.dependsOn, s.service);
  if (!inGraph(op)) return earlier.flatMap((s) => s.ops);
  const needs = closure(graph!, op.service);
  return earlier.filter((s) => !inGraph(s) || needs.has(s.service)).flatMap((s) => s.ops);
}

/** For each operation (by index), what it waits for. `graph` lets independent Services run side by side. */
export function schedule(ops: readonly Op[], graph?: ServiceGraph): Waits[] {
  const deps: Waits[] = [];
  const segments: Segment[] = [];
  let before: number[] = [];
  let segment: number[] = [];
  let barrier: number | undefined;
  let replaces: number[] = [];
  let changed = false;
  const images = new Map<string, number[]>();
  for (const [i, op] of ops.entries()) {
    const current = segments.at(-1);
    if (current === undefined || current.project !== op.project || current.service !== op.service) {
      before = waitedFor(op, segments, graph);
      segment = [];
      segments.push({ project: op.project, service: op.service, ops: segment });
      barrier = undefined;
      replaces = [];
      changed = false;
      images.clear();
    }
    const wait = new Set<number>();
    const healthy: number[] = [];
    let rollsAfter: number | undefined;
    // Services that only create have no older Deployment serving in their place: their containers serve once live,
    // whether or not their pointers moved yet.
    const fresh = op.kind === "create" &&
      before.every((j) => ops[j].kind === "create" || ops[j].kind === "point");
    for (const j of before) {
      if (fresh && ops[j].kind === "create") healthy.push(j);
      else if (!fresh || ops[j].kind !== "point") wait.add(j);
    }
    const removal = op.kind === "stop" || op.kind === "remove";
    if (!SIDE_BY_SIDE.has(op.kind) || (removal && changed)) {
      for (const j of segment) wait.add(j);
    } else {
      if (barrier !== undefined) wait.add(barrier);
      for (const j of images.get(op.machineId) ?? []) wait.add(j);
      if (op.kind === "replace") {
        const window = op.parallelism ?? 1;
        if (window > 0 && replaces.length >= window) {
          rollsAfter = replaces[replaces.length - window];
          wait.add(rollsAfter);
        }
      }
    }
    deps.push({
      done: [...wait].sort((a, b) => a - b),
      healthy,
      ...(rollsAfter === undefined ? {} : { rollsAfter }),
    });
    segment.push(i);
    if (!SIDE_BY_SIDE.has(op.kind)) barrier = i;
    if (op.kind === "replace") replaces.push(i);
    if (op.kind === "image" || op.kind === "pull") {
      images.set(op.machineId, [...(images.get(op.machineId) ?? []), i]);
    }
    if (CHANGE.has(op.kind)) changed = true;
  }
  return deps;
}
