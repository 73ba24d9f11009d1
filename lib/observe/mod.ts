/**
 * The Observe Store: this Machine's container output (and, later, its metrics), kept on this Machine only.
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
 * @module
 */

export { decodeLogEntry, encodeLogFrame } from "./log_entry.ts";
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
export type { ObserveApp, ObserveServer } from "./server.ts";
export { lineToWire, parseTime } from "./wire.ts";
export type { WireLine } from "./wire.ts";
export { ObserveError } from "./errors.ts";
export type { ObserveErrorCode } from "./errors.ts";
export { FORMAT_VERSION } from "./schema.ts";
export { runObserve } from "./run.ts";
export type { ObserveOptions } from "./run.ts";
