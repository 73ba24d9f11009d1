/**
 * A store file's schema: the log, the sites and the row tables, only ever extended, and what opening reads back.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import { SITE_ID_PATTERN } from "./change.ts";
import { type ChangeRow, filterColumn, parseStoredBody, ROW_COLUMNS, toChange } from "./change_rows.ts";
import { StoreError } from "./errors.ts";
import { SIGNING_KEY_PATTERN } from "./signing.ts";
import type { StoreCore } from "./store_core.ts";
import type { StoreOptions } from "./store_types.ts";
import { TABLES, type TableSpec } from "./tables.ts";

/** Creates or extends the tables of an opened file, checks it is this Cluster's and this Machine's, and loads the
 * watermarks, clock and sequence number into `core`. */
export function initSchema(core: StoreCore): void {
  const db = core.db;
  // An empty file has no table to extend, no change to load and no row to count: those lookups (three
  // statements for each row table) are skipped, and it is made with the same statements as any other.
  const fresh = db.prepare(`SELECT 1 FROM sqlite_master LIMIT 1`).get() === undefined;
  db.exec(`CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)`);
  db.exec(`CREATE TABLE IF NOT EXISTS changes (
    site TEXT NOT NULL, version INTEGER NOT NULL, tbl TEXT NOT NULL, key TEXT NOT NULL,
    hlc TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '', deleted INTEGER NOT NULL DEFAULT 0, body TEXT,
    PRIMARY KEY (site, version)) WITHOUT ROWID`);
  db.exec(`CREATE TABLE IF NOT EXISTS sites (
    site TEXT PRIMARY KEY NOT NULL, contiguous INTEGER NOT NULL DEFAULT 0, max INTEGER NOT NULL DEFAULT 0)`);
  if (!db.prepare(`PRAGMA table_info(changes)`).all().some((c) => c.name === "sig")) {
    db.exec(`ALTER TABLE changes ADD COLUMN sig TEXT`);
  }
  // `floor`: every version of the site up to it that is not in the log was compacted (see compact).
  if (!db.prepare(`PRAGMA table_info(sites)`).all().some((c) => c.name === "floor")) {
    db.exec(`ALTER TABLE sites ADD COLUMN floor INTEGER NOT NULL DEFAULT 0`);
  }
  checkIdentity(core, "cluster_id", core.clusterId);
  checkIdentity(core, "site_id", core.siteId);
  core.anchors = readAnchors(core);
  db.exec("BEGIN IMMEDIATE");
  try {
    for (const spec of Object.values(TABLES)) ensureTable(core, spec, fresh);
    db.exec("COMMIT");
  } catch (error) {
    db.exec("ROLLBACK");
    throw error;
  }
  // A version that left this Machine is never reused, even when a crash lost it from the log: the high-water
  // mark was made durable before it left (see outbound), and numbering resumes above it.
  core.durableVersion = readHighWater(core);
  core.ownVersion = Math.max(fresh ? 0 : ownVersionHeld(core), core.durableVersion);
  if (core.ownVersion > 0) core.advance(core.siteId, core.ownVersion);
  if (fresh) return;
  const last = db.prepare(`SELECT max(hlc) AS h FROM changes`).get();
  if (typeof last?.h === "string") core.clock.observe(last.h);
  for (const spec of Object.values(TABLES)) {
    const row = db.prepare(`SELECT max(seq) AS s FROM ${spec.name}`).get();
    core.seq = Math.max(core.seq, Number(row?.s ?? 0));
  }
}

// The own site's entry in `sites` is refreshed at open, not on each local write: the log is the truth; but
// compaction may have removed this Machine's latest changes from the log, and `sites` still counts them.
function ownVersionHeld(core: StoreCore): number {
  const own = core.db.prepare(`SELECT max(version) AS v FROM changes WHERE site = ?`).get(core.siteId);
  const counted = core.db.prepare(`SELECT max AS v FROM sites WHERE site = ?`).get(core.siteId);
  return Math.max(Number(own?.v ?? 0), Number(counted?.v ?? 0));
}

function checkIdentity(core: StoreCore, name: string, value: string): void {
  const row = core.db.prepare(`SELECT value FROM meta WHERE name = ?`).get(name);
  if (row === undefined) {
    core.db.prepare(`INSERT INTO meta (name, value) VALUES (?, ?)`).run(name, value);
  } else if (row.value !== value) {
    core.db.close();
    throw new StoreError(
      "conflict",
      `Cannot open store: file belongs to ${name} "${String(row.value)}", not "${value}"`,
    );
  }
}

// Tables and columns are only ever added, with defaults: an older file opens as is, a newer one too.
function ensureTable(core: StoreCore, spec: TableSpec, fresh: boolean): void {
  const db = core.db;
  const existed = fresh
    ? undefined
    : db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(spec.name);
  const wanted: [string, string][] = [
    ...ROW_COLUMNS,
    ...spec.filters.map((field): [string, string] => [filterColumn(field), "TEXT"]),
  ];
  const columns = wanted.map(([column, type]) => `${column} ${type}`).join(", ");
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${spec.name} (seq INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, ${columns})`,
  );
  if (existed !== undefined) {
    const have = new Set(db.prepare(`PRAGMA table_info(${spec.name})`).all().map((c) => String(c.name)));
    for (const [column, type] of wanted) {
      if (have.has(column)) continue;
      db.exec(`ALTER TABLE ${spec.name} ADD COLUMN ${column} ${type}`);
      const field = spec.filters.find((f) => filterColumn(f) === column);
      // A filter field added later is filled from the bodies already held, so filters see every row.
      if (field !== undefined) {
        db.exec(`UPDATE ${spec.name} AS r SET ${column} = (
          SELECT CASE WHEN json_type(c.body, '$.${field}') = 'text' THEN json_extract(c.body, '$.${field}') END
          FROM changes c WHERE c.site = r.site AND c.version = r.version)`);
      }
    }
  }
  if (existed === undefined && !fresh) {
    // A table this release adds may already have changes in the log, carried unread by an older release.
    const rows = db.prepare(`SELECT * FROM changes WHERE tbl = ?`).all(spec.name) as unknown as ChangeRow[];
    for (const row of rows) core.merge(toChange(row), parseStoredBody(row.body));
  }
}

function readAnchors(core: StoreCore): Record<string, string> {
  const row = core.db.prepare(`SELECT value FROM meta WHERE name = 'anchors'`).get();
  if (row === undefined) return {};
  try {
    const value = JSON.parse(String(row.value)) as Record<string, unknown>;
    return Object.fromEntries(
      Object.entries(value).filter(([, v]) => typeof v === "string" && SIGNING_KEY_PATTERN.test(v)),
    ) as Record<string, string>;
  } catch {
    return {};
  }
}

function readHighWater(core: StoreCore): number {
  if (core.hwmPath === undefined) return 0;
  let text: string;
  try {
    text = Deno.readTextFileSync(core.hwmPath);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return 0;
    throw new StoreError("unavailable", `Cannot read "${core.hwmPath}": ${String(error)}`, {
      cause: error,
    });
  }
  const match = /^(\d{1,15})\n?$/.exec(text);
  if (match === null) {
    throw new StoreError("unavailable", `Cannot read "${core.hwmPath}": expected a version number`);
  }
  return Number(match[1]);
}

/** Checks the ids and opens the file: WAL, synchronous=NORMAL, an explicit busy timeout. */
export function openDatabase(options: StoreOptions): DatabaseSync {
  if (!SITE_ID_PATTERN.test(options.siteId)) {
    throw new StoreError("invalid_argument", `Invalid site id "${options.siteId}": expected [a-z0-9-]{1,64}`);
  }
  if (options.clusterId.length === 0 || options.clusterId.length > 128) {
    throw new StoreError(
      "invalid_argument",
      `Invalid cluster id "${options.clusterId}": expected 1 to 128 chars`,
    );
  }
  const timeout = options.busyTimeoutMs ?? 5000;
  try {
    const db = new DatabaseSync(options.path, { timeout });
    db.exec(`PRAGMA busy_timeout = ${Math.floor(timeout)}`);
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    return db;
  } catch (error) {
    throw new StoreError("unavailable", `Cannot open store "${options.path}": ${String(error)}`, {
      cause: error,
    });
  }
}
