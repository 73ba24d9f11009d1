/**
 * Serving Pointers: the Machine-side handlers of `ployz.serving.set_pointer.v1` and
 * `ployz.serving.pointer_status.v1`, over this Machine's copy of the store. Setting a pointer is a name-keyed
 * write: concurrent writers converge to one last-writer-wins winner, and losing is silent (DESIGN.md bet 5).
 *
 * @module
 */

import type { ServingPointer, Store } from "../store/mod.ts";
import { serviceKey } from "./serving_set.ts";

/** Sets `project/service` to serve `deployment`; the version grows by one. Returns the new and replaced pointer. */
export function setServingPointer(
  store: Store,
  request: { project: string; service: string; deployment: string },
): { pointer: ServingPointer; previous?: ServingPointer } {
  const key = serviceKey(request.project, request.service);
  const previous = store.servingPointers.get(key);
  if (previous !== undefined && previous.deployment === request.deployment) {
    return { pointer: previous, previous };
  }
  const pointer: ServingPointer = {
    ...previous,
    project: request.project,
    service: request.service,
    deployment: request.deployment,
    version: (previous?.version ?? 0) + 1,
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
  const missing = store.machines.list().map((m) => m.id).filter((m) =>
    !down.has(m) &&
    !acks.some((a) =>
      a.machine_id === m && a.deployment === pointer.deployment &&
      (pointer.version === undefined || a.version === pointer.version)
    )
  ).sort();
  return { pointer, acks, missing };
}
