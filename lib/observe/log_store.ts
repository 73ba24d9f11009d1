/**
 * The Log Store: container output in `<dataDir>/observe/observe.db` (node:sqlite, WAL). One writer per process.
 *
 * Lines and the cursor that covers them are written in one transaction, so a restart (even after `kill -9`)
 * resumes exactly after the last stored line. Lines of a removed container stay until retention deletes them.
 *
 * @module
 */

import { DatabaseSync, type StatementSync } from "node:sqlite";
import { type ContainerIdentity, IDENTITY_COLUMN_NAMES, identityValues } from "./containers.ts";
import type { LogBatch, LogCursor } from "./log_reader.ts";
import { historyQuery, type LogHistoryQuery, type LogHistoryResult } from "./log_query.ts";
import { FORMAT_VERSION, SCHEMA } from "./schema.ts";

/** Options of {@link openLogStore}. */
export interface LogStoreOptions {
  /** The database file, normally `<dataDir>/observe/observe.db`. */
  path: string;
  /** Receives one-line notices, such as a store deleted for its unknown format version. */
  log?: (line: string) => void;
  /** SQLite busy timeout. Default 5000 ms. */
  busyTimeoutMs?: number;
}

/** A known container's row key and saved cursor. */
export interface StoredContainer {
  /** The row key lines point at. */
  key: number;
  /** Where reading stopped; `undefined` before the first batch. */
  cursor: LogCursor | undefined;
}

/** Per-container reading statistics. */
export interface ContainerStats extends ContainerIdentity {
  /** Bytes skipped as corrupt, over the container's life. */
  corruptBytes: number;
  /** How many times output was rotated away before it was read. */
  gaps: number;
  /** When the container was last seen gone, in ms since the epoch; `undefined` while it exists. */
  goneMs: number | undefined;
}

const decoder = new TextDecoder();

/** The Log Store; see the module doc. */
export class LogStore {
  readonly #db: DatabaseSync;
  readonly #listeners = new Set<() => void>();
  readonly #insertLine: StatementSync;
  readonly #saveCursor: StatementSync;

  /** Wraps an open, initialised database; use {@link openLogStore}. */
  constructor(db: DatabaseSync) {
    this.#db = db;
    this.#insertLine = db.prepare(
      "INSERT INTO lines (container, time_nano, stream, partial, text) VALUES (?, ?, ?, ?, ?)",
    );
    this.#saveCursor = db.prepare(
      `UPDATE containers SET file_ino = ?, file_head = ?, file_offset = ?,
         corrupt_bytes = corrupt_bytes + ?, gaps = gaps + ? WHERE key = ?`,
    );
  }

  /** Records a container (or notes it exists again) and returns its key and saved cursor. */
  upsertContainer(identity: ContainerIdentity, nowMs: number = Date.now()): StoredContainer {
    this.#db.prepare(
      `INSERT INTO containers (${IDENTITY_COLUMN_NAMES}, slot, first_seen_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (container_id) DO UPDATE SET gone_ms = NULL, name = excluded.name`,
    ).run(...identityValues(identity), identity.slot, nowMs);
    const row = this.#db.prepare(
      "SELECT key, file_ino, file_head, file_offset FROM containers WHERE container_id = ?",
    ).get(identity.containerId)!;
    const cursor = row.file_ino === null ? undefined : {
      ino: Number(row.file_ino),
      head: new Uint8Array(row.file_head as Uint8Array),
      offset: Number(row.file_offset),
    };
    return { key: Number(row.key), cursor };
  }

  /** Stores a batch's lines and moves the container's cursor past them, in one transaction. */
  append(key: number, batch: LogBatch): void {
    const db = this.#db;
    db.exec("BEGIN IMMEDIATE");
    try {
      for (const entry of batch.entries) {
        this.#insertLine.run(
          key,
          entry.timeNano,
          entry.stream === "stderr" ? 1 : 0,
          entry.partial ? 1 : 0,
          decoder.decode(entry.line),
        );
      }
      const c = batch.cursor;
      this.#saveCursor.run(c.ino, c.head, c.offset, batch.corruptBytes, batch.gap ? 1 : 0, key);
      db.exec("COMMIT");
    } catch (error) {
      db.exec("ROLLBACK");
      throw error;
    }
    if (batch.entries.length > 0) this.#listeners.forEach((listener) => listener());
  }

  /** Marks a container gone from Docker; its lines stay until retention deletes them. */
  markGone(containerId: string, nowMs: number = Date.now()): void {
    this.#db.prepare("UPDATE containers SET gone_ms = ? WHERE container_id = ? AND gone_ms IS NULL")
      .run(nowMs, containerId);
  }

  /** Ids of containers not marked gone. */
  presentContainers(): string[] {
    return this.#db.prepare("SELECT container_id FROM containers WHERE gone_ms IS NULL").all()
      .map((r) => String(r.container_id));
  }

  /** Reading statistics of one container, or `undefined` when it is unknown. */
  containerStats(containerId: string): ContainerStats | undefined {
    const row = this.#db.prepare("SELECT * FROM containers WHERE container_id = ?").get(containerId);
    if (row === undefined) return undefined;
    return {
      containerId: String(row.container_id),
      name: String(row.name),
      machineId: String(row.machine_id),
      project: String(row.project),
      service: String(row.service),
      deployment: String(row.deployment),
      slot: String(row.slot),
      corruptBytes: Number(row.corrupt_bytes),
      gaps: Number(row.gaps),
      goneMs: row.gone_ms === null ? undefined : Number(row.gone_ms),
    };
  }

  /** Lines matching a query, merged in time order; see {@link LogHistoryQuery}. */
  logHistory(query: LogHistoryQuery): LogHistoryResult {
    return historyQuery(this.#db, query);
  }

  /** Calls `listener` after every append that stored lines; returns the unsubscribe function. */
  onAppend(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The database, for the query and budget helpers of this area. */
  get database(): DatabaseSync {
    return this.#db;
  }

  /** Bytes the store's pages hold (free pages excluded). */
  usedBytes(): number {
    const pages = Number(this.#db.prepare("PRAGMA page_count").get()!.page_count);
    const free = Number(this.#db.prepare("PRAGMA freelist_count").get()!.freelist_count);
    const size = Number(this.#db.prepare("PRAGMA page_size").get()!.page_size);
    return (pages - free) * size;
  }

  /** The time of the oldest stored line, or `undefined` when none is stored. */
  oldestTimeNano(): bigint | undefined {
    const statement = this.#db.prepare("SELECT min(time_nano) AS t FROM lines");
    statement.setReadBigInts(true);
    const t = statement.get()!.t;
    return t === null ? undefined : BigInt(t as bigint);
  }

  /**
   * Deletes every line older than `cutNano`, and the rows of gone containers left without lines; then hands the
   * freed pages back to the file system. Returns how many lines went.
   */
  deleteBefore(cutNano: bigint): number {
    const db = this.#db;
    db.exec("BEGIN IMMEDIATE");
    let deleted: number;
    try {
      deleted = Number(db.prepare("DELETE FROM lines WHERE time_nano < ?").run(cutNano).changes);
      db.exec(
        `DELETE FROM containers WHERE gone_ms IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM lines WHERE lines.container = containers.key)`,
      );
      db.exec("COMMIT");
    } catch (error) {
      db.exec("ROLLBACK");
      throw error;
    }
    // Each step of this pragma frees one page: step it to the end.
    db.prepare("PRAGMA incremental_vacuum").all();
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    return deleted;
  }

  /** Closes the database. */
  close(): void {
    this.#listeners.clear();
    this.#db.close();
  }
}

/**
 * Opens (or creates) the Log Store at `options.path`. A file whose format version is not this release's, or that
 * is not a database at all, is deleted and started again, with one line to `options.log` saying so.
 */
export function openLogStore(options: LogStoreOptions): LogStore {
  const timeout = options.busyTimeoutMs ?? 5000;
  const found = existingVersion(options.path, timeout);
  if (found !== undefined && found !== FORMAT_VERSION && found !== "") {
    removeDatabase(options.path);
    options.log?.(
      `Deleted the Observe Store "${options.path}": format version "${found}" is unknown to this release (which writes "${FORMAT_VERSION}"); starting again`,
    );
  }
  const db = new DatabaseSync(options.path, { timeout });
  try {
    db.exec(`PRAGMA busy_timeout = ${Math.floor(timeout)}`);
    if (found !== FORMAT_VERSION) initialise(db);
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
  } catch (error) {
    db.close();
    throw error;
  }
  return new LogStore(db);
}

/** The stored format version; `""` for an empty database, `undefined` when no file exists. */
function existingVersion(path: string, timeout: number): string | undefined {
  try {
    Deno.statSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(path, { timeout });
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all();
    if (tables.length === 0) return "";
    if (!tables.some((t) => t.name === "meta")) return "unknown";
    const row = db.prepare("SELECT value FROM meta WHERE key = 'format_version'").get();
    return row === undefined ? "unknown" : String(row.value);
  } catch {
    // Not a database this release can read: an unknown format too.
    return "unreadable";
  } finally {
    db?.close();
  }
}

function removeDatabase(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`, `${path}-journal`]) {
    try {
      Deno.removeSync(file);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
}

function initialise(db: DatabaseSync): void {
  // Must precede the first table: deleted hours then shrink the file instead of only freeing pages inside it.
  db.exec("PRAGMA auto_vacuum = INCREMENTAL");
  db.exec("BEGIN IMMEDIATE");
  try {
    db.exec(SCHEMA);
    db.prepare("INSERT INTO meta (key, value) VALUES ('format_version', ?)").run(FORMAT_VERSION);
    db.exec("COMMIT");
  } catch (error) {
    db.exec("ROLLBACK");
    throw error;
  }
}
