/**
 * The health gate of a new container, bounded: wait the monitor period, then allow a configured
 * check start_period + (interval + timeout) × retries + 5 s (Docker's defaults 0, 30 s, 30 s, 3), at most
 * {@linkcode MAX_HEALTH_WAIT_MS}.
 *
 * @module
 */

import type { NormalizedHealthcheck } from "../compose/types.ts";
import type { HealthGate } from "./types.ts";

/** Default monitor period. */
export const DEFAULT_MONITOR_MS = 5_000;

const MARGIN_MS = 5_000;

/**
 * The longest a health gate waits: the bound a Machine puts on `ployz.container.wait_healthy.v1`'s
 * `deadline_ms` (`WAIT_HEALTHY_MAX_MS` in lib/rpc, kept out of the plan's imports; health_test.ts ties the
 * two). A longer wait would be refused only once the container was made.
 */
export const MAX_HEALTH_WAIT_MS = 3_600_000;

/** The gate for a Service's healthcheck and monitor period: {@linkcode healthWaitMs}, capped. */
export function healthGate(check: NormalizedHealthcheck, monitorMs: number): HealthGate {
  return { deadlineMs: Math.min(healthWaitMs(check, monitorMs), MAX_HEALTH_WAIT_MS), monitorMs };
}

/** How long the healthcheck and monitor period allow a new container to pass, before the cap. */
export function healthWaitMs(check: NormalizedHealthcheck, monitorMs: number): number {
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
  return Math.max(deadlineMs, monitorMs + MARGIN_MS);
}
