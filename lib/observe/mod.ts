/**
 * The Observe Store: this Machine's container output and metrics, kept on this Machine only.
 *
 * The Log Store reads the files Docker's `local` log driver writes under
 * `<dockerRoot>/containers/<id>/local-logs/` — file reads only, no Docker API — for containers labelled
 * `ployz.managed=1`, whose `ployz.*` labels it reads from `config.v2.json`. A frame it cannot parse is skipped and
 * its bytes counted as corrupt ({@link scanFrames} states the resync rule); rotation is followed by inode and
 * leading bytes ({@link readLogBatches}). Lines and each container's cursor commit in one transaction, so a
 * restart neither repeats nor loses a line. Output outlives its container until the disk budget
 * ({@link enforceBudget}) deletes it, oldest hour first.
 *
 * The store records a format version; a file of another version is deleted and started again (the Observe Store
 * is outside the Stable promise). History is served on `<runDir>/observe.sock`:
 * `POST /observe/v1/log_history` and `POST /observe/v1/tail_logs` (NDJSON).
 *
 * Metrics: every 10 s the {@link Sampler} reads each Ployz container's cgroup (v1 or v2), its init process's
 * network counters and its `config.v2.json` state, and the Machine's own `/proc` files — file reads only. A value
 * it cannot read is a named gap ({@link GapReason}), never zero. Raw samples are kept 24 h; each closed hour is
 * folded into 5 minute Rollups per Service, Deployment and the Machine, kept 90 days, with start, death, OOM and
 * health markers counted in ({@link MetricStore}). Sources that can block run on a {@link SlowTick} with a
 * timeout. Metrics share the Log Store's file, format version and disk budget. History:
 * `POST /observe/v1/metric_history` ({@link metricHistory}).
 *
 * @module
 */

// Only what other areas and the programs use; everything else stays inside the area.
export { runObserve } from "./run.ts";
export type { ObserveOptions } from "./run.ts";
export { openLogStore } from "./log_store.ts";
export { serveObserveSocket } from "./server.ts";
export { budgetFromEnv } from "./budget.ts";
export { ObserveError } from "./errors.ts";
export { isGauge } from "./metrics/metric_names.ts";
export type { MetricName } from "./metrics/metric_names.ts";
export { Sampler } from "./metrics/sampler.ts";
export { MetricStore } from "./metrics/metric_store.ts";
export { metricHistory } from "./metrics/history.ts";
export { renderPlot } from "./metrics/plot.ts";
// Types the exports above name.
export type { DiskBudget } from "./budget.ts";
export type { LogStore, LogStoreOptions } from "./log_store.ts";
export type { ObserveAppOptions, ObserveServer } from "./server.ts";
export type { SampleRound } from "./metrics/sampler.ts";
export type { MaintainReport, StoredRollup, SubjectFilter } from "./metrics/metric_store.ts";
export type { RawMarker, RawSample, Scope } from "./metrics/grouping.ts";
export type { MetricHistoryQuery, MetricHistoryResult } from "./metrics/history.ts";
export type { PlotOptions } from "./metrics/plot.ts";
export type { ContainerIdentity } from "./containers.ts";
export type { ContainerStats, StoredContainer } from "./log_store.ts";
export type { LogBatch } from "./log_reader.ts";
export type { LogHistoryQuery, LogHistoryResult } from "./log_query.ts";
export type { ContainerSample } from "./metrics/sampler.ts";
export type { Values } from "./metrics/metric_names.ts";
export type { GroupLabels } from "./metrics/grouping.ts";
export type { Bucket } from "./metrics/rollup.ts";
export type { Marker } from "./metrics/container_state.ts";
export type { MetricSeries } from "./metrics/history.ts";
export type { LogCursor } from "./log_reader.ts";
export type { ScannedEntry } from "./frames.ts";
export type { LogLine, LogSelector } from "./log_query.ts";
export type { GapReason, Reading } from "./metrics/gaps.ts";
export type { Acc, BucketCounts, MarkerCounts } from "./metrics/rollup.ts";
export type { MetricPoint } from "./metrics/history.ts";
export type { LogEntry, LogStream } from "./log_entry.ts";
export type { Gap } from "./metrics/gaps.ts";
export type { PointValue } from "./metrics/history.ts";
export type { CounterValue, GaugeValue } from "./metrics/history.ts";
