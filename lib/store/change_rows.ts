/**
 * How the store keeps rows and changes in SQLite: the bookkeeping columns of a row, filter columns, and a change
 * read back from the log.
 *
 * @module
 */

import type { StatementSync } from "node:sqlite";
import { type Change, parseBodyText } from "./change.ts";
import type { Rejection } from "./store_types.ts";

// One table's row writes, prepared once: `local` refuses to overwrite a row owned by another site, `merge` keeps
// whichever of the row and the change has the greater (hlc, site). Both report whether the row changed.
export interface RowWriters {
  local: StatementSync;
  merge: StatementSync;
}

export interface ChangeRow {
  site: string;
  version: number;
  tbl: string;
  key: string;
  hlc: string;
  owner: string;
  deleted: number;
  body: string | null;
  sig?: string | null;
}

// A change that passed the shape and table rules, with its position in the batch.
export interface Screened {
  index: number;
  change: Change;
  body?: Record<string, unknown>;
}

// A row names the change that won it by (site, version); its body is read from the log, so each body is stored
// once. The log is never pruned of a change a row still names. `seq` is the rowid: a write moves the row to the
// end, so changesSince and the filter index append instead of inserting in the middle.
export const ROW_COLUMNS: [string, string][] = [
  ["deleted", "INTEGER NOT NULL DEFAULT 0"],
  ["hlc", "TEXT NOT NULL DEFAULT ''"],
  ["site", "TEXT NOT NULL DEFAULT ''"],
  ["version", "INTEGER NOT NULL DEFAULT 0"],
  ["owner", "TEXT NOT NULL DEFAULT ''"],
];

export const FIELD_PATTERN = /^[a-z][a-z0-9_]{0,62}$/;

// Filter columns carry a prefix so a body field can never collide with a bookkeeping column.
export function filterColumn(field: string): string {
  return `f_${field}`;
}

// Only JSON strings are copied, matching what a filter on a string value can equal.
export function filterValue(body: Record<string, unknown> | undefined, field: string): string | null {
  const value = body?.[field];
  return typeof value === "string" ? value : null;
}

export function parseStoredBody(text: string | null): Record<string, unknown> | undefined {
  if (text === null) return undefined;
  const body = parseBodyText(text);
  return typeof body === "string" ? undefined : body;
}

export function toChange(row: ChangeRow): Change {
  const change: Change = {
    site: row.site,
    version: row.version,
    table: row.tbl,
    key: row.key,
    hlc: row.hlc,
    owner: row.owner,
    deleted: row.deleted === 1,
    body: row.body,
  };
  if (typeof row.sig === "string") change.sig = row.sig;
  return change;
}

export function rejection(index: number, change: Change, reason: string): Rejection {
  return { index, site: change.site, version: change.version, reason };
}
