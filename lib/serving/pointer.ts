/**
 * Serving Pointers: the Machine-side handlers of `ployz.serving.set_pointer.v1` and
 * `ployz.serving.pointer_status.v1`, over this Machine's copy of the store. Setting a pointer is a name-keyed
 * write: concurrent writers converge to one last-writer-wins winner, and losing is silent (docs/bets.md, bet 5).
 *
 * @module
 */

import type { ServingPointer, Store } from "../store/mod.ts";
import { serviceKey, supersededOf } from "./serving_set.ts";

/** How many superseded Deployments a pointer remembers. */
const MAX_SUPERSEDED = 32;

/**
 * Sets `project/service` to serve `deployment`; the version grows by one. The pointer records what it superseded:
 * the Deployments it named before and those of the Service's containers this Machine's copy holds now, so a
 * retire loop stops only those, never the containers of a newer Deploy the pointer has not named yet. Returns the
 * new and replaced pointer.
 */
export function setServingPointer(
  store: Store,
  request: { project: string; service: string; deployment: string },
): { pointer: ServingPointer; previous?: ServingPointer } {
  const key = serviceKey(request.project, request.service);
  const previous = store.servingPointers.get(key);
  if (previous !== undefined && previous.deployment === request.deployment) {
    return { pointer: previous, previous };
  }
  const seen = store.liveContainers().filter((r) =>
    r.project === request.project && r.service === request.service && typeof r.deployment === "string"
  ).map((r) => r.deployment as string);
  const before = previous === undefined ? [] : [previous.deployment, ...supersededOf(previous) ?? []];
  const superseded = [...new Set([...before, ...seen])].filter((d) => d !== request.deployment)
    .slice(0, MAX_SUPERSEDED);
  const pointer: ServingPointer = {
    ...previous,
    project: request.project,
    service: request.service,
    deployment: request.deployment,
    version: (previous?.version ?? 0) + 1,
    superseded,
  };
  store.servingPointers.put(pointer);
  return previous === undefined ? { pointer } : { pointer, previous };
}

/** This Machine's view of a pointer and its acks; `missing` lists Machines (not in `down`) without a current ack. */
export function pointerStatus(
  store: Store,
  request: { project: string; service: string },
  down: ReadonlySet<string> = new Set(),
): {
  pointer?: ServingPointer;
  acks: { "machine_id": string; deployment: string; version?: number; "acked_at"?: string }[];
  missing: string[];
} {
  const key = serviceKey(request.project, request.service);
  const pointer = store.servingPointers.get(key);
  const acks = store.acks.list({ pointer: key }).map((a) => ({
    "machine_id": a.machine_id,
    deployment: a.deployment,
    ...(a.version === undefined ? {} : { version: a.version }),
    ...(a.acked_at === undefined ? {} : { "acked_at": a.acked_at }),
  }));
  if (pointer === undefined) return { acks, missing: [] };
  const missing = store.liveMachines().map((m) => m.id).filter((m) =>
    !down.has(m) &&
    !acks.some((a) =>
      a.machine_id === m && a.deployment === pointer.deployment &&
      (pointer.version === undefined || a.version === pointer.version)
    )
  ).sort();
  return { pointer, acks, missing };
}
