/**
 * The one deadline policy for Docker requests: each request names its class, the class sets how long Docker may
 * take to answer in full, and a missed deadline aborts the request and becomes `DockerError{code:"unavailable"}`
 * naming the operation.
 *
 * @module
 */

import { DockerError, toDockerError } from "./errors.ts";
import { describeMs } from "../../util/mod.ts";

/** Per-class deadlines in milliseconds. Streams (image load, events, the body of an image save) have none. */
export interface Deadlines {
  /** Inspecting one object, pinging, reading engine info. */
  inspectMs: number;
  /** Listing objects through a filter. */
  listMs: number;
  /** Creating a container, network or volume; renaming; connecting a network. */
  createMs: number;
  /** Starting a container (Docker sets up mounts, networks and ports before it answers). */
  startMs: number;
  /** Added to the grace period of a stop: Docker answers only after the grace and the kill. */
  stopMarginMs: number;
  /** Removing a container. */
  removeMs: number;
  /** Pulling an image from a registry, progress included. */
  pullMs: number;
  /** Until Docker starts answering an image save; the archive then streams without a deadline. */
  streamStartMs: number;
}

/** The defaults: short for reads, longer where Docker does real work before it answers. */
export const DEFAULT_DEADLINES: Readonly<Deadlines> = Object.freeze({
  inspectMs: 10_000,
  listMs: 10_000,
  createMs: 30_000,
  startMs: 60_000,
  stopMarginMs: 15_000,
  removeMs: 30_000,
  pullMs: 600_000,
  streamStartMs: 30_000,
});

/** The class of a request, which picks its deadline. `unbounded` is only for streams a caller can cancel. */
export type DeadlineClass =
  | "inspect"
  | "list"
  | "create"
  | "start"
  | "stop"
  | "remove"
  | "pull"
  | "stream_start"
  | "unbounded";

/** The deadline field of each class that has one of its own. */
const FIELD_OF: Readonly<Record<Exclude<DeadlineClass, "stop" | "unbounded">, keyof Deadlines>> = {
  inspect: "inspectMs",
  list: "listMs",
  create: "createMs",
  start: "startMs",
  remove: "removeMs",
  pull: "pullMs",
  "stream_start": "streamStartMs",
};

/** Resolves a class to milliseconds (`undefined` means no deadline); `graceSeconds` is the stop grace. */
export function deadlineFor(deadlines: Deadlines, cls: DeadlineClass, graceSeconds = 0): number | undefined {
  if (cls === "unbounded") return undefined;
  if (cls === "stop") return graceSeconds * 1000 + deadlines.stopMarginMs;
  return deadlines[FIELD_OF[cls]];
}

/** Merges caller overrides onto the defaults and refuses non-positive values. */
export function resolveDeadlines(overrides: Partial<Deadlines> = {}): Deadlines {
  const merged: Deadlines = { ...DEFAULT_DEADLINES, ...overrides };
  for (const [key, value] of Object.entries(merged)) {
    if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
      throw new DockerError("invalid_argument", `Invalid Docker deadline "${key}": ${String(value)}`);
    }
  }
  return merged;
}

/**
 * Runs `run` with an abort signal that fires when `deadlineMs` passes or `signal` aborts. A missed deadline rejects
 * with `unavailable`; a caller's abort rejects with the signal's reason; anything else goes through
 * `toDockerError`. The timer never outlives the call.
 */
export function withDeadline<T>(
  operation: string,
  deadlineMs: number | undefined,
  signal: AbortSignal | undefined,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      fn();
    };
    if (deadlineMs !== undefined) {
      timer = setTimeout(() => {
        const error = new DockerError(
          "unavailable",
          `Cannot ${operation}: Docker did not answer within ${describeMs(deadlineMs)}`,
          { details: { deadline_ms: String(deadlineMs) } },
        );
        controller.abort(error);
        settle(() => reject(error));
      }, deadlineMs);
    }
    if (signal !== undefined) {
      onAbort = () => {
        controller.abort(signal.reason);
        settle(() => reject(signal.reason));
      };
      signal.addEventListener("abort", onAbort, { once: true });
    }
    run(controller.signal).then(
      (value) => settle(() => resolve(value)),
      (error) => settle(() => reject(toDockerError(operation, error))),
    );
  }).finally(() => {
    clearTimeout(timer);
    if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
  });
}
