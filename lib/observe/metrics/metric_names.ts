/**
 * The metrics the sampler records. Gauges (`cpu`, `memory`, `load1`, `disk_free`) are averaged and maxed over time;
 * counters (`net_rx`, `net_tx`, `disk_read`, `disk_write`, `restarts`) are deltas per round, summed over time.
 *
 * @module
 */

import type { Reading } from "./gaps.ts";

/** A metric's name, as stored and as on the wire. */
export type MetricName =
  | "cpu"
  | "memory"
  | "net_rx"
  | "net_tx"
  | "disk_read"
  | "disk_write"
  | "restarts"
  | "load1"
  | "disk_free";

/** Every metric, in column order. */
export const METRICS: readonly MetricName[] = [
  "cpu",
  "memory",
  "net_rx",
  "net_tx",
  "disk_read",
  "disk_write",
  "restarts",
  "load1",
  "disk_free",
];

/** Metrics sampled per container: all but the Machine's own load and free disk. */
export const CONTAINER_METRICS: readonly MetricName[] = METRICS.filter((m) =>
  m !== "load1" && m !== "disk_free"
);

/** Metrics sampled for the Machine itself. */
export const MACHINE_METRICS: readonly MetricName[] = [
  "cpu",
  "memory",
  "net_rx",
  "net_tx",
  "load1",
  "disk_free",
];

/** Whether a metric is a gauge (averaged) rather than a per-round delta (summed). */
export function isGauge(metric: MetricName): boolean {
  return metric === "cpu" || metric === "memory" || metric === "load1" || metric === "disk_free";
}

/** One subject's values in one round: each a number or a named gap; absent when not measured. */
export type Values = Partial<Record<MetricName, Reading>>;
