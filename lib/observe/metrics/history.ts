/**
 * Metric history: the series a selector asks for over a window, as points of a fixed step in which every metric
 * is a value or a named gap — a step without any sample is the gap `not_sampled`, never zero.
 *
 * Raw samples answer when the whole window lies within raw retention (the last 24 h); otherwise Rollups do, with
 * the hours not folded yet taken from raw samples by the same rule. The step defaults to the smallest multiple of
 * the source's resolution (10 s raw, 5 min Rollups) that keeps the window within 720 points.
 *
 * @module
 */

import { ObserveError } from "../errors.ts";
import type { GapReason } from "./gaps.ts";
import {
  bucketize,
  type GroupBuckets,
  type GroupLabels,
  groupOf,
  type RawMarker,
  type Scope,
} from "./grouping.ts";
import { CONTAINER_METRICS, isGauge, MACHINE_METRICS, type MetricName } from "./metric_names.ts";
import { type MetricStore, RAW_RETENTION_MS, ROLLUP_STEP_MS, type SubjectFilter } from "./metric_store.ts";
import { type Bucket, type BucketCounts, emptyBucket, mainGap, mergeBucket } from "./rollup.ts";

/** The sampling interval the raw resolution follows by default: 10 s. */
export const DEFAULT_SAMPLE_MS = 10_000;
/** Points in a window when no step is asked for. */
export const DEFAULT_POINTS = 720;
/** Most points one query may return. */
export const MAX_POINTS = 10_000;

/** A metric history query. */
export interface MetricHistoryQuery extends SubjectFilter {
  /** The Machine's own series instead of containers'. */
  machine?: boolean;
  /** Window start, ms since the epoch. */
  sinceMs: number;
  /** Window end (exclusive); default now. */
  untilMs?: number;
  /** Point width in ms; rounded up to the source's resolution. */
  stepMs?: number;
}

/** A gauge's value over a point: the average and largest round total. */
export interface GaugeValue {
  /** Average. */
  avg: number;
  /** Maximum. */
  max: number;
}

/** A per-round delta's value over a point: the total. */
export interface CounterValue {
  /** Total over the point. */
  sum: number;
}

/** A metric's value in a point, or the gap that stands for it. */
export type PointValue = GaugeValue | CounterValue | { gap: GapReason };

/** One point of a series: its bucket's counts and each metric's value. */
export interface MetricPoint extends BucketCounts {
  /** Start of the point, ms since the epoch. */
  timeMs: number;
  /** Each metric of the series. */
  values: Partial<Record<MetricName, PointValue>>;
}

/** One series: a Service, a Deployment or the Machine. */
export interface MetricSeries extends GroupLabels {
  /** What the series is of. */
  scope: Scope;
  /** Containers whose raw samples it holds (empty for Rollups). */
  containers: string[];
  /** The metrics each point carries. */
  metrics: MetricName[];
  /** Points in time order, one per step of the window. */
  points: MetricPoint[];
}

/** The answer of a metric history query. */
export interface MetricHistoryResult {
  /** Which data answered. */
  source: "raw" | "rollup";
  /** Window start, aligned down to the step. */
  sinceMs: number;
  /** Window end. */
  untilMs: number;
  /** Point width. */
  stepMs: number;
  /** The sampling interval. */
  sampleMs: number;
  /** The series, Services (or Deployments) sorted by name. */
  series: MetricSeries[];
  /** Markers in the window, when raw markers still cover it. */
  markers: RawMarker[];
}

/** Answers `query` from `store`; `nowMs` decides what raw retention still covers. */
export function metricHistory(
  store: MetricStore,
  query: MetricHistoryQuery,
  nowMs: number = Date.now(),
  sampleMs: number = DEFAULT_SAMPLE_MS,
): MetricHistoryResult {
  const untilMs = query.untilMs ?? nowMs;
  if (!(untilMs > query.sinceMs)) {
    throw new ObserveError("invalid_argument", "Cannot read metric history: until must be after since");
  }
  const scope: Scope = query.machine === true
    ? "machine"
    : query.deployment !== undefined
    ? "deployment"
    : "service";
  if (scope === "machine" && (query.project ?? query.service ?? query.deployment) !== undefined) {
    throw new ObserveError(
      "invalid_argument",
      "Cannot read metric history: machine selects the Machine's own series and takes no project, service or deployment",
    );
  }
  const raw = query.sinceMs >= nowMs - RAW_RETENTION_MS;
  const resolution = raw ? sampleMs : ROLLUP_STEP_MS;
  const window = untilMs - query.sinceMs;
  const wanted = query.stepMs ?? Math.ceil(window / DEFAULT_POINTS);
  const stepMs = Math.max(1, Math.ceil(wanted / resolution)) * resolution;
  const sinceMs = Math.floor(query.sinceMs / stepMs) * stepMs;
  const count = Math.ceil((untilMs - sinceMs) / stepMs);
  if (count > MAX_POINTS) {
    throw new ObserveError(
      "invalid_argument",
      `Cannot read metric history: ${count} points exceed the limit of ${MAX_POINTS}; ask for a larger step`,
    );
  }
  const filter: SubjectFilter = scope === "machine"
    ? {}
    : { project: query.project, service: query.service, deployment: query.deployment };
  // Raw samples answer from where Rollups stop (or the whole window, for a raw query).
  const rawFrom = raw ? sinceMs : Math.max(sinceMs, store.foldedUntilMs() ?? sinceMs);
  const groups = rawFrom < untilMs
    ? bucketize(
      scope,
      stepMs,
      store.rawSamples(rawFrom, untilMs, filter),
      store.rawMarkers(rawFrom, untilMs, filter),
    )
    : new Map<string, GroupBuckets>();
  if (!raw) {
    for (const r of store.rollups(scope, sinceMs, Math.min(rawFrom, untilMs), filter)) {
      const [key, labels] = groupOf(scope, r.labels);
      let g = groups.get(key);
      if (g === undefined) groups.set(key, g = { labels, containers: new Set(), buckets: new Map() });
      const start = Math.floor(r.bucket.startMs / stepMs) * stepMs;
      let b = g.buckets.get(start);
      if (b === undefined) g.buckets.set(start, b = emptyBucket(start));
      mergeBucket(b, r.bucket);
    }
  }
  const metrics = scope === "machine" ? [...MACHINE_METRICS] : [...CONTAINER_METRICS];
  const series = [...groups.values()]
    .map((g): MetricSeries => ({
      scope,
      ...g.labels,
      containers: [...g.containers].sort(),
      metrics,
      points: Array.from(
        { length: count },
        (_, i) => point(g.buckets.get(sinceMs + i * stepMs), sinceMs + i * stepMs, metrics),
      ),
    }))
    .sort((a, b) =>
      a.project.localeCompare(b.project) || a.service.localeCompare(b.service) ||
      a.deployment.localeCompare(b.deployment)
    );
  const markers = scope === "machine"
    ? []
    : store.rawMarkers(Math.max(sinceMs, nowMs - RAW_RETENTION_MS), untilMs, filter);
  return { source: raw ? "raw" : "rollup", sinceMs, untilMs, stepMs, sampleMs, series, markers };
}

function point(bucket: Bucket | undefined, timeMs: number, metrics: MetricName[]): MetricPoint {
  const b = bucket ?? emptyBucket(timeMs);
  const values: MetricPoint["values"] = {};
  for (const m of metrics) {
    const acc = b.metrics[m];
    if (acc !== undefined && acc.n > 0) {
      values[m] = isGauge(m) ? { avg: acc.sum / acc.n, max: acc.max } : { sum: acc.sum };
    } else values[m] = { gap: b.samples === 0 ? "not_sampled" : mainGap(b, m) };
  }
  return { timeMs, rounds: b.rounds, samples: b.samples, values, gaps: b.gaps, markers: b.markers };
}
