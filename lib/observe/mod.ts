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

export { decodeLogEntry } from "./log_entry.ts";
export type { LogEntry, LogEntryInput, LogStream } from "./log_entry.ts";
export { MAX_FRAME_BYTES, scanFrames } from "./frames.ts";
export type { ScannedEntry, ScanOptions, ScanResult } from "./frames.ts";
export { HEAD_BYTES, LIVE_LOG, readLogBatches } from "./log_reader.ts";
export type { LogBatch, LogCursor, ReadOptions } from "./log_reader.ts";
export { identityFromConfig, scanContainers } from "./containers.ts";
export type { ContainerIdentity, ContainerScan, FoundContainer } from "./containers.ts";
export { LogStore, openLogStore } from "./log_store.ts";
export type { ContainerStats, LogStoreOptions, StoredContainer } from "./log_store.ts";
export { MAX_HISTORY_LIMIT } from "./log_query.ts";
export type { LogHistoryQuery, LogHistoryResult, LogLine, LogSelector } from "./log_query.ts";
export { tailLogs } from "./tail.ts";
export type { TailEvent, TailOptions, TailQuery } from "./tail.ts";
export {
  budgetFromEnv,
  DEFAULT_MAX_AGE_MS,
  DEFAULT_MAX_BYTES,
  DEFAULT_MIN_FREE_BYTES,
  DEFAULT_MIN_FREE_RATIO,
  diskSpace,
  enforceBudget,
  freeFloor,
} from "./budget.ts";
export type { BudgetReport, DiskBudget, DiskSpace } from "./budget.ts";
export { Ingester } from "./ingester.ts";
export type { IngesterOptions, PollReport } from "./ingester.ts";
export { createObserveApp, serveObserveSocket } from "./server.ts";
export type { ObserveApp, ObserveAppOptions, ObserveServer } from "./server.ts";
export { lineToWire, parseTime } from "./wire.ts";
export type { WireLine } from "./wire.ts";
export { ObserveError } from "./errors.ts";
export { FORMAT_VERSION } from "./schema.ts";
export { runObserve } from "./run.ts";
export type { ObserveOptions } from "./run.ts";
export { gap, GAP_REASONS, isGap } from "./metrics/gaps.ts";
export type { Gap, GapReason, Reading } from "./metrics/gaps.ts";
export { CONTAINER_METRICS, isGauge, MACHINE_METRICS, METRICS } from "./metrics/metric_names.ts";
export type { MetricName, Values } from "./metrics/metric_names.ts";
export { CgroupReader } from "./metrics/cgroup.ts";
export type { CgroupCounters, CgroupRoots } from "./metrics/cgroup.ts";
export { machineCores, parseLoadavg, parseMeminfo, parseNetDev, parseProcStat } from "./metrics/procfs.ts";
export type { CpuTimes, NetCounters } from "./metrics/procfs.ts";
export { markersBetween, stateFromConfig, StateScanner } from "./metrics/container_state.ts";
export type { ContainerState, Marker, StateScan } from "./metrics/container_state.ts";
export { Sampler } from "./metrics/sampler.ts";
export type { ContainerSample, SamplerOptions, SampleRound } from "./metrics/sampler.ts";
export { diskFreeSource, SlowTick } from "./metrics/slow_tick.ts";
export type { SlowSource, SlowTickOptions } from "./metrics/slow_tick.ts";
export {
  MetricStore,
  RAW_RETENTION_MS,
  ROLLUP_RETENTION_MS,
  ROLLUP_STEP_MS,
} from "./metrics/metric_store.ts";
export type { MaintainReport, StoredRollup, SubjectFilter } from "./metrics/metric_store.ts";
export { addMarker, addRound, emptyBucket, mainGap, mergeBucket } from "./metrics/rollup.ts";
export type { Acc, Bucket, MarkerCounts } from "./metrics/rollup.ts";
export type { GroupLabels, RawMarker, RawSample, Scope } from "./metrics/grouping.ts";
export { DEFAULT_POINTS, DEFAULT_SAMPLE_MS, MAX_POINTS, metricHistory } from "./metrics/history.ts";
export type {
  CounterValue,
  GaugeValue,
  MetricHistoryQuery,
  MetricHistoryResult,
  MetricPoint,
  MetricSeries,
  PointValue,
} from "./metrics/history.ts";
export { historyToWire, metricQueryFromWire } from "./metrics/wire.ts";
export type {
  MetricHistoryWireRequest,
  WireMarker,
  WireMetricHistory,
  WirePoint,
  WireSeries,
} from "./metrics/wire.ts";
export { fetchMetricHistory } from "./metrics/client.ts";
export { runMetrics } from "./metrics/metrics_loop.ts";
export type { MetricsLoopOptions } from "./metrics/metrics_loop.ts";
export { renderPlot, sparkline } from "./metrics/plot.ts";
export type { PlotOptions } from "./metrics/plot.ts";
