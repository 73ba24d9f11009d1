/**
 * Which containers take traffic, derived from replicated rows alone: a Service with a Serving Pointer is served
 * only by containers of the pointed Deployment while any of them can serve, else by its other containers; a Service
 * without one by all of its containers. Either way only containers that are running, healthy (or without a
 * healthcheck), addressed and not marked stopping (or leaving for a removal or a client stop) serve.
 *
 * @module
 */

import type { Container, ServingPointer } from "../store/mod.ts";
import { markedStopping } from "./labels.ts";

/** `project/service`, the key of a Serving Pointer and of a Service's group of containers. */
export function serviceKey(project: string, service: string): string {
  return `${project}/${service}`;
}

/** One Service's containers and what serves. */
export interface ServiceGroup {
  /** `project/service`. */
  key: string;
  /** Project name. */
  project: string;
  /** Service name. */
  service: string;
  /** The pointer, when the Service has one. */
  pointer?: ServingPointer;
  /** Every container row of the Service. */
  containers: Container[];
  /** The rows that take traffic, sorted by Machine then id. */
  serving: Container[];
}

/** Extra context for {@link servingGroups}. */
export interface ServingContext {
  /** Container ids marked stopping in this Machine's memory, besides rows' own `stopping` field. */
  stopping?: ReadonlySet<string>;
  /** Rows marked leaving that still serve here until what replaces them can (see `leaving.ts`, held rows). */
  holding?: ReadonlySet<string>;
}

/** Whether a row can take traffic, pointer aside. */
export function servable(row: Container, context: ServingContext = {}): boolean {
  if (row.state !== "running") return false;
  if (row.health !== undefined && row.health !== "healthy" && row.health !== "none") return false;
  if ((row.addresses ?? []).length === 0) return false;
  if (row.slot === "hook") return false;
  if (markedStopping(row) && context.holding?.has(row.id) !== true) return false;
  if (context.stopping?.has(row.id) === true) return false;
  return true;
}

/** Whether a row belongs to what its Service's pointer names (true when the Service has no pointer). */
export function pointed(row: Container, pointer: ServingPointer | undefined): boolean {
  return pointer === undefined || row.deployment === pointer.deployment;
}

/**
 * The Deployments a pointer superseded: the ones it named before and those whose containers its writer saw when
 * it moved. Undefined for a pointer written without the list, whose every other Deployment counts as superseded.
 * A Deployment in neither (a newer Deploy's containers, not pointed at yet) is never retired by this pointer.
 */
export function supersededOf(pointer: ServingPointer): string[] | undefined {
  const list = pointer.superseded;
  if (!Array.isArray(list)) return undefined;
  return list.filter((d): d is string => typeof d === "string");
}

/** Groups rows by Service and picks what serves, deterministic in its order. */
export function servingGroups(
  containers: readonly Container[],
  pointers: readonly ServingPointer[],
  context: ServingContext = {},
): ServiceGroup[] {
  const byKey = new Map<string, ServingPointer>();
  for (const p of pointers) byKey.set(serviceKey(p.project, p.service), p);
  const groups = new Map<string, ServiceGroup>();
  for (const row of containers) {
    const key = serviceKey(row.project, row.service);
    let group = groups.get(key);
    if (group === undefined) {
      group = { key, project: row.project, service: row.service, containers: [], serving: [] };
      const pointer = byKey.get(key);
      if (pointer !== undefined) group.pointer = pointer;
      groups.set(key, group);
    }
    group.containers.push(row);
  }
  for (const group of groups.values()) {
    const live = group.containers.filter((r) => servable(r, context));
    const pointedLive = live.filter((r) => pointed(r, group.pointer));
    // When nothing of the pointed Deployment can serve (a stop-first redeploy has taken its last old container out,
    // and the pointer moves only once every new one passed health), the Service's other servable containers serve
    // rather than none.
    group.serving = (pointedLive.length > 0 ? pointedLive : live)
      .sort((a, b) => compare(a.machine_id, b.machine_id) || compare(a.id, b.id));
  }
  return [...groups.values()].sort((a, b) => compare(a.key, b.key));
}

/** Orders strings by code unit, the same on every Machine. */
export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
