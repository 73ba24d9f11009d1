/**
 * The Observe Store's SQLite schema: the Log Store's tables and the metric tables, in one file. The Observe Store
 * is outside the Stable promise: it carries a format version and a file of any other version is deleted and
 * started again, never migrated.
 *
 * @module
 */

import { IDENTITY_COLUMNS_DDL } from "./containers.ts";
import { METRIC_SCHEMA } from "./metrics/metric_schema.ts";

/** The format this release writes and reads. */
export const FORMAT_VERSION = "2";

/**
 * Tables. `lines.container` points at `containers.key` so a line stores a small integer, not a 64-character id;
 * `stream` is 0 (stdout) or 1 (stderr); `partial` is 1 for a fragment that no newline ends. The cursor columns
 * of `containers` are written in the same transaction as the lines they cover.
 */
export const SCHEMA = `
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;
CREATE TABLE containers (
  key INTEGER PRIMARY KEY,
${IDENTITY_COLUMNS_DDL}
  slot TEXT NOT NULL,
  first_seen_ms INTEGER NOT NULL,
  gone_ms INTEGER,
  file_ino INTEGER,
  file_head BLOB,
  file_offset INTEGER NOT NULL DEFAULT 0,
  corrupt_bytes INTEGER NOT NULL DEFAULT 0,
  gaps INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX containers_by_service ON containers (project, service);
CREATE TABLE lines (
  id INTEGER PRIMARY KEY,
  container INTEGER NOT NULL,
  time_nano INTEGER NOT NULL,
  stream INTEGER NOT NULL,
  partial INTEGER NOT NULL,
  text TEXT NOT NULL
) STRICT;
CREATE INDEX lines_by_time ON lines (time_nano);
CREATE INDEX lines_by_container ON lines (container, time_nano);
${METRIC_SCHEMA}`;
