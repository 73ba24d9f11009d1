/**
 * Folding samples into buckets, the one rule raw queries, hourly Rollups and queries over Rollups share. Within a
 * group (a Service, a Deployment or the Machine) the containers' values of one round are added up first; a bucket
 * then keeps, per metric, how many rounds had a readable value, the sum of those round totals and the largest.
 * Gauges read as average and maximum, per-round deltas as a sum. A value that could not be read adds to the
 * bucket's named gap counts, never to its sums; a metric with no readable round in a bucket is a gap.
 *
 * @module
 */

import type { Marker } from "./container_state.ts";
import { type GapReason, isGap } from "./gaps.ts";
import type { MetricName, Values } from "./metric_names.ts";

/** Per-metric totals of a bucket. */
export interface Acc {
  /** Rounds with a readable value. */
  n: number;
  /** Sum of the round totals. */
  sum: number;
  /** Largest round total. */
  max: number;
}

/** Counts of state-change markers. */
export interface MarkerCounts {
  /** Starts. */
  start: number;
  /** Deaths. */
  die: number;
  /** OOM kills. */
  oom: number;
  /** Health status changes. */
  health: number;
}

/** What a bucket counts beside its values; a history point carries them over as they are. */
export interface BucketCounts {
  /** Sampling rounds inside. */
  rounds: number;
  /** Subject samples inside (one per container per round). */
  samples: number;
  /** Values inside that were gaps, by metric and reason (a bucket can hold values and gaps at once). */
  gaps: Partial<Record<MetricName, Partial<Record<GapReason, number>>>>;
  /** State changes inside. */
  markers: MarkerCounts;
}

/** One bucket of one group. */
export interface Bucket extends BucketCounts {
  /** Start of the bucket, ms since the epoch. */
  startMs: number;
  /** Values that were gaps. */
  gapCount: number;
  /** Totals of readable values. */
  metrics: Partial<Record<MetricName, Acc>>;
}

/** An empty bucket starting at `startMs`. */
export function emptyBucket(startMs: number): Bucket {
  return {
    startMs,
    rounds: 0,
    samples: 0,
    gapCount: 0,
    metrics: {},
    gaps: {},
    markers: { start: 0, die: 0, oom: 0, health: 0 },
  };
}

/** Adds one round: the values of every subject of the group sampled in it. */
export function addRound(bucket: Bucket, samples: Values[]): void {
  bucket.rounds++;
  bucket.samples += samples.length;
  const totals = new Map<MetricName, number>();
  for (const values of samples) {
    for (const [metric, reading] of Object.entries(values) as [MetricName, number | { gap: GapReason }][]) {
      if (isGap(reading)) {
        const byReason = bucket.gaps[metric] ??= {};
        byReason[reading.gap] = (byReason[reading.gap] ?? 0) + 1;
        bucket.gapCount++;
      } else {
        totals.set(metric, (totals.get(metric) ?? 0) + reading);
      }
    }
  }
  for (const [metric, total] of totals) {
    const acc = bucket.metrics[metric];
    if (acc === undefined) bucket.metrics[metric] = { n: 1, sum: total, max: total };
    else {
      acc.n++;
      acc.sum += total;
      acc.max = Math.max(acc.max, total);
    }
  }
}

/** Counts a marker. */
export function addMarker(bucket: Bucket, kind: Marker["kind"]): void {
  bucket.markers[kind]++;
}

/** Adds `from` into `into` (a finer bucket into a coarser one). */
export function mergeBucket(into: Bucket, from: Bucket): void {
  into.rounds += from.rounds;
  into.samples += from.samples;
  into.gapCount += from.gapCount;
  for (const [metric, acc] of Object.entries(from.metrics) as [MetricName, Acc][]) {
    const mine = into.metrics[metric];
    if (mine === undefined) into.metrics[metric] = { ...acc };
    else {
      mine.n += acc.n;
      mine.sum += acc.sum;
      mine.max = Math.max(mine.max, acc.max);
    }
  }
  for (const [metric, reasons] of Object.entries(from.gaps) as [MetricName, Record<GapReason, number>][]) {
    const mine = into.gaps[metric] ??= {};
    for (const [reason, count] of Object.entries(reasons) as [GapReason, number][]) {
      mine[reason] = (mine[reason] ?? 0) + count;
    }
  }
  for (const kind of ["start", "die", "oom", "health"] as const) into.markers[kind] += from.markers[kind];
}

/** The most frequent gap reason of a metric in a bucket; `not_sampled` when it has none. */
export function mainGap(bucket: Bucket, metric: MetricName): GapReason {
  let best: GapReason = "not_sampled";
  let most = 0;
  for (const [reason, count] of Object.entries(bucket.gaps[metric] ?? {}) as [GapReason, number][]) {
    if (count > most) {
      best = reason;
      most = count;
    }
  }
  return best;
}
