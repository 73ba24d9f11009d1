/**
 * What each routed Service's sites proxy to, as the local Ingress Proxy loaded it: one log line per Service whose
 * set of serving containers changed, so a Machine's log says when its proxy began or stopped sending a Service's
 * requests to each container, and when it had nothing to send them to (its sites answer 502). Pure.
 *
 * @module
 */

import type { Container, ServingPointer } from "../store/mod.ts";
import { ingressRoutes } from "./labels.ts";
import { type ServingContext, servingGroups } from "./serving_set.ts";

/** Per `project/service`, the containers its sites proxy to, as `name@machine` joined by `, `. */
export type ServedSets = ReadonlyMap<string, string>;

/** The served sets of the Services with ingress routes, and a line for each that differs from `before`. */
export function servedChanges(
  before: ServedSets,
  containers: readonly Container[],
  pointers: readonly ServingPointer[],
  context: ServingContext,
): { next: Map<string, string>; lines: string[] } {
  const next = new Map<string, string>();
  const lines: string[] = [];
  for (const group of servingGroups(containers, pointers, context)) {
    if (!group.containers.some((r) => ingressRoutes(r).length > 0)) continue;
    // Names come from replicated rows: escaped, so a forged one cannot start a line of its own in the log.
    const served = group.serving.map((r) => `${escaped(r.name)}@${escaped(r.machine_id.slice(0, 8))}`).join(
      ", ",
    );
    next.set(group.key, served);
    if (before.get(group.key) === served) continue;
    const key = JSON.stringify(group.key);
    lines.push(
      served === ""
        ? `serving: the Ingress Proxy sends ${key} to no container: its sites answer 502`
        : `serving: the Ingress Proxy sends ${key} to ${served}`,
    );
  }
  return { next, lines };
}

/** `text` with quotes, backslashes and control characters escaped as in JSON, without the surrounding quotes. */
export function escaped(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}
