/**
 * The metric tables of the Observe Store, in the same SQLite file and under the same format version as the Log
 * Store, so the disk budget deletes both kinds together.
 *
 * - `metric_subjects`: what samples are of — a container (its `ployz.*` labels) or the Machine (`kind` `machine`,
 *   `container_id` `""`). A gone container keeps its row while samples point at it.
 * - `metric_samples`: raw rounds, kept 24 h. One row per subject per round; a column is `NULL` when the value was
 *   not measured, and `gaps` (JSON `{"metric": "reason"}`) names every value that could not be read.
 * - `metric_markers`: state changes (start, die, oom, health) seen between rounds, kept 24 h.
 * - `metric_rollups`: 5 minute buckets per Service, Deployment and the Machine, kept 90 days. Per metric:
 *   `_n` rounds with a readable value, `_sum` the sum of per-round totals, `_max` the largest per-round total;
 *   `gaps` JSON `{"metric": {"reason": count}}`; marker counts.
 *
 * @module
 */

import { IDENTITY_COLUMNS_DDL } from "../containers.ts";
import { METRICS } from "./metric_names.ts";

const valueColumns = METRICS.map((m) => `  ${m} REAL,`).join("\n");
const rollupColumns = METRICS.map((m) =>
  `  ${m}_n INTEGER NOT NULL DEFAULT 0,\n  ${m}_sum REAL,\n  ${m}_max REAL,`
)
  .join("\n");

/** The metric tables' DDL. */
export const METRIC_SCHEMA = `
CREATE TABLE metric_subjects (
  key INTEGER PRIMARY KEY,
  kind TEXT NOT NULL,
${IDENTITY_COLUMNS_DDL}
  first_seen_ms INTEGER NOT NULL,
  gone_ms INTEGER
) STRICT;
CREATE TABLE metric_samples (
  time_ms INTEGER NOT NULL,
  subject INTEGER NOT NULL,
${valueColumns}
  gaps TEXT
) STRICT;
CREATE INDEX metric_samples_by_time ON metric_samples (time_ms);
CREATE TABLE metric_markers (
  time_ms INTEGER NOT NULL,
  subject INTEGER NOT NULL,
  kind TEXT NOT NULL,
  at_ms INTEGER NOT NULL,
  detail TEXT NOT NULL
) STRICT;
CREATE INDEX metric_markers_by_time ON metric_markers (time_ms);
CREATE TABLE metric_rollups (
  bucket_ms INTEGER NOT NULL,
  scope TEXT NOT NULL,
  machine_id TEXT NOT NULL,
  project TEXT NOT NULL,
  service TEXT NOT NULL,
  deployment TEXT NOT NULL,
  rounds INTEGER NOT NULL,
  samples INTEGER NOT NULL,
  gap_count INTEGER NOT NULL,
${rollupColumns}
  starts INTEGER NOT NULL,
  dies INTEGER NOT NULL,
  ooms INTEGER NOT NULL,
  health_changes INTEGER NOT NULL,
  gaps TEXT NOT NULL,
  PRIMARY KEY (scope, project, service, deployment, bucket_ms)
) STRICT;
CREATE INDEX metric_rollups_by_time ON metric_rollups (bucket_ms);
`;
