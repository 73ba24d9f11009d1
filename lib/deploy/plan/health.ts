/**
 * The health gate of a new container, bounded: wait the monitor period, then allow a configured
 * check start_period + (interval + timeout) × retries + 5 s (Docker's defaults 0, 30 s, 30 s, 3).
 *
 * @module
 */

import type { NormalizedHealthcheck } from "../compose/types.ts";
import type { HealthGate } from "./types.ts";

/** Default monitor period. */
export const DEFAULT_MONITOR_MS = 5_000;

const MARGIN_MS = 5_000;

/** The gate for a Service's healthcheck and monitor period. */
export function healthGate(check: NormalizedHealthcheck, monitorMs: number): HealthGate {
  let deadlineMs: number;
  if (check.kind === "disabled") {
    deadlineMs = monitorMs + MARGIN_MS;
  } else {
    // The image's own check is unknown here: bound it by Docker's defaults.
    const c = check.kind === "configured" ? check : undefined;
    const interval = c?.intervalMs ?? 30_000;
    const timeout = c?.timeoutMs ?? 30_000;
    const retries = c?.retries ?? 3;
    deadlineMs = (c?.startPeriodMs ?? 0) + (interval + timeout) * retries + MARGIN_MS;
  }
  return { deadlineMs: Math.max(deadlineMs, monitorMs + MARGIN_MS), monitorMs };
}
