/**
 * An operation while it is being planned (before its index is known), and what the planner asks of an observed
 * container.
 *
 * @module
 */

import type { ObservedContainerView } from "./machine_api.ts";
import type { Op } from "./types.ts";

/** An op before its index is known. */
export type Draft = Op extends infer T ? T extends Op ? Omit<T, "index"> : never : never;

/** Whether the container runs (or Docker is restarting it). */
export function isRunning(c: ObservedContainerView): boolean {
  return c.state === "running" || c.state === "restarting";
}
