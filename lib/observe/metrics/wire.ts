/**
 * `POST /observe/v1/metric_history` on the wire: snake_case JSON; `since`/`until` as in log history (nanoseconds
 * as a decimal string, or RFC 3339), `step` in whole seconds; times in answers are ms since the epoch.
 *
 * @module
 */

import { parseTime } from "../wire.ts";
import type { FieldRule } from "../wire_reader.ts";
import type { GapReason } from "./gaps.ts";
import type { MetricHistoryQuery, MetricHistoryResult, MetricPoint, PointValue } from "./history.ts";
import type { MetricName } from "./metric_names.ts";

const label: FieldRule = { kind: "string", min: 1, max: 256, optional: true };

/** Strict reader rules of a {@link MetricHistoryWireRequest} on observe.sock (only this release's daemon asks it). */
export const METRIC_HISTORY_RULES: Record<string, FieldRule> = {
  project: label,
  service: label,
  deployment: label,
  machine: { kind: "true", optional: true },
  since: { kind: "string", min: 1, max: 64 },
  until: { kind: "string", min: 1, max: 64, optional: true },
  step: { kind: "int", min: 1, max: 90 * 24 * 3600, optional: true },
};

/** A `metric_history` request: a selector (or `machine: true`), a window and an optional step in seconds. */
export interface MetricHistoryWireRequest {
  /** `ployz.project`. */
  project?: string;
  /** `ployz.service`. */
  service?: string;
  /** `ployz.deployment`: one series per Deployment instead of per Service. */
  deployment?: string;
  /** The Machine's own series; takes no other selector. */
  machine?: true;
  /** Window start: nanoseconds since the epoch as a decimal string, or RFC 3339. */
  since: string;
  /** Window end (exclusive); default now. */
  until?: string;
  /** Point width in whole seconds; rounded up to the data's resolution. */
  step?: number;
}

/** The query a wire request asks for; throws `invalid_argument` for a bad time. */
export function metricQueryFromWire(request: MetricHistoryWireRequest): MetricHistoryQuery {
  const ms = (field: string, value: string): number => Number(parseTime(field, value) / 1_000_000n);
  return {
    project: request.project,
    service: request.service,
    deployment: request.deployment,
    machine: request.machine,
    sinceMs: ms("since", request.since),
    untilMs: request.until === undefined ? undefined : ms("until", request.until),
    stepMs: request.step === undefined ? undefined : request.step * 1000,
  };
}

/** One point on the wire. */
export interface WirePoint {
  /** Start of the point, ms since the epoch. */
  "time_ms": number;
  /** Sampling rounds inside. */
  rounds: number;
  /** Subject samples inside. */
  samples: number;
  /** Each metric: `{avg, max}`, `{sum}` or `{gap}`. */
  values: Partial<Record<MetricName, PointValue>>;
  /** Gap counts inside, by metric and reason. */
  gaps: Partial<Record<MetricName, Partial<Record<GapReason, number>>>>;
  /** Marker counts inside: `start`, `die`, `oom`, `health`. */
  markers: MetricPoint["markers"];
}

/** One series on the wire. */
export interface WireSeries {
  /** `service`, `deployment` or `machine`. */
  scope: string;
  /** The Machine the samples came from. */
  "machine_id": string;
  /** `ployz.project`. */
  project: string;
  /** `ployz.service`. */
  service: string;
  /** `ployz.deployment` (`""` for a Service series). */
  deployment: string;
  /** Containers whose raw samples it holds. */
  containers: string[];
  /** Metrics each point carries. */
  metrics: MetricName[];
  /** Points, one per step. */
  points: WirePoint[];
}

/** One marker on the wire. */
export interface WireMarker {
  /** The round that saw it. */
  "time_ms": number;
  /** When Docker says it happened. */
  "at_ms": number;
  /** `start`, `die`, `oom` or `health`. */
  kind: string;
  /** Docker's container id. */
  "container_id": string;
  /** The container's name. */
  "container_name": string;
  /** `ployz.project`. */
  project: string;
  /** `ployz.service`. */
  service: string;
  /** `ployz.deployment`. */
  deployment: string;
  /** Exit code of a death, status of a health change. */
  detail: string;
}

/** The `metric_history` answer on the wire. */
export interface WireMetricHistory {
  /** `raw` or `rollup`. */
  source: "raw" | "rollup";
  /** Window start, aligned down to the step. */
  "since_ms": number;
  /** Window end. */
  "until_ms": number;
  /** Point width. */
  "step_ms": number;
  /** The sampling interval. */
  "sample_ms": number;
  /** The series. */
  series: WireSeries[];
  /** Markers in the window while raw markers cover it. */
  markers: WireMarker[];
}

/** A history result as the wire carries it. */
export function historyToWire(result: MetricHistoryResult): WireMetricHistory {
  return {
    source: result.source,
    "since_ms": result.sinceMs,
    "until_ms": result.untilMs,
    "step_ms": result.stepMs,
    "sample_ms": result.sampleMs,
    series: result.series.map((s) => ({
      scope: s.scope,
      "machine_id": s.machineId,
      project: s.project,
      service: s.service,
      deployment: s.deployment,
      containers: s.containers,
      metrics: s.metrics,
      points: s.points.map((p) => ({
        "time_ms": p.timeMs,
        rounds: p.rounds,
        samples: p.samples,
        values: p.values,
        gaps: p.gaps,
        markers: p.markers,
      })),
    })),
    markers: result.markers.map((m) => ({
      "time_ms": m.timeMs,
      "at_ms": m.atMs,
      kind: m.kind,
      "container_id": m.containerId,
      "container_name": m.containerName,
      project: m.project,
      service: m.service,
      deployment: m.deployment,
      detail: m.detail,
    })),
  };
}
