/**
 * The state one open store file shares between its parts (schema, writes and merges, queries, compaction): the
 * database, the statement cache, the clock, the signer, the watermarks, and the few operations every part uses.
 * Not exported from `mod.ts`; {@linkcode Store} is the public surface.
 *
 * @module
 */

import type { DatabaseSync, SQLInputValue, StatementSync } from "node:sqlite";
import { type Change, parseBodyText } from "./change.ts";
import { filterColumn, filterValue, type RowWriters } from "./change_rows.ts";
import { StoreError } from "./errors.ts";
import { HybridClock } from "./hlc.ts";
import { ChangeSigner, SignatureVerifier, SIGNING_KEY_PATTERN } from "./signing.ts";
import type { CommitEvent, StoreOptions } from "./store_types.ts";
import { TABLES, type TableSpec } from "./tables.ts";

/** One open store's shared state; the parts of the store read and move it. */
export class StoreCore {
  /** This Machine's id. */
  readonly siteId: string;
  /** The Cluster this copy belongs to. */
  readonly clusterId: string;
  readonly db: DatabaseSync;
  readonly clock: HybridClock;
  readonly statements = new Map<string, StatementSync>();
  readonly writers = new Map<string, RowWriters>();
  readonly listeners = new Set<(event: CommitEvent) => void>();
  readonly signer: ChangeSigner | undefined;
  readonly verifier = new SignatureVerifier();
  // Admitted keys read from `members`: a Machine's key never changes and admissions are never withdrawn.
  readonly admittedKeys = new Map<string, string>();
  readonly hwmPath: string | undefined;
  readonly now: () => number;
  anchors: Record<string, string> = {};
  durableVersion = 0;
  hwmTarget = 0;
  hwmWrites: Promise<void> = Promise.resolve();
  ownVersion = 0;
  ownContiguous = 0;
  seq = 0;
  closed = false;

  constructor(db: DatabaseSync, options: StoreOptions) {
    this.db = db;
    this.siteId = options.siteId;
    this.clusterId = options.clusterId;
    this.now = options.now ?? Date.now;
    this.clock = new HybridClock(options.now);
    this.signer = options.signingSecret === undefined ? undefined : new ChangeSigner(options.signingSecret);
    this.hwmPath = options.path === ":memory:" || options.path === "" ? undefined : `${options.path}.version`;
  }

  statement(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  assertOpen(): void {
    if (this.closed) throw new StoreError("unavailable", `Store is closed: site "${this.siteId}"`);
  }

  transaction<R>(fn: () => R): R {
    this.assertOpen();
    this.statement("BEGIN IMMEDIATE").run();
    try {
      const result = fn();
      this.statement("COMMIT").run();
      return result;
    } catch (error) {
      if (this.db.isTransaction) this.db.exec("ROLLBACK");
      throw error;
    }
  }

  emit(event: CommitEvent): void {
    if (this.listeners.size === 0) return;
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch (error) {
        // A failing listener must not undo a commit or starve other listeners.
        console.error(error);
      }
    }
  }

  // Moves a site's contiguous watermark over every version now held without a gap.
  advance(site: string, max: number): void {
    this.statement(
      `INSERT INTO sites (site, contiguous, max) VALUES (?, 0, ?)
       ON CONFLICT (site) DO UPDATE SET max = MAX(max, excluded.max)`,
    ).run(site, max);
    const row = this.statement(`SELECT contiguous, max FROM sites WHERE site = ?`).get(site)!;
    let contiguous = Number(row.contiguous);
    if (contiguous >= Number(row.max)) {
      if (site === this.siteId) this.ownContiguous = contiguous;
      return;
    }
    const next = this.statement(
      `SELECT version FROM changes WHERE site = ? AND version > ? ORDER BY version LIMIT 1000`,
    );
    for (;;) {
      const versions = next.all(site, contiguous).map((r) => Number(r.version));
      let moved = false;
      for (const v of versions) {
        if (v !== contiguous + 1) break;
        contiguous = v;
        moved = true;
      }
      if (!moved || versions.length < 1000) break;
    }
    this.statement(`UPDATE sites SET contiguous = ? WHERE site = ?`).run(contiguous, site);
    if (site === this.siteId) this.ownContiguous = contiguous;
  }

  // Every known site with its watermark and highest version; the own site's come from memory.
  sites(): { site: string; contiguous: number; max: number }[] {
    const rows = this.statement(`SELECT site, contiguous, max FROM sites ORDER BY site`).all().map((r) => ({
      site: String(r.site),
      contiguous: Number(r.contiguous),
      max: Number(r.max),
    }));
    if (this.ownVersion === 0) return rows;
    const own = { site: this.siteId, contiguous: this.ownContiguous, max: this.ownVersion };
    const at = rows.findIndex((r) => r.site === this.siteId);
    if (at >= 0) rows[at] = own;
    else rows.push(own);
    return rows.sort((a, b) => (a.site < b.site ? -1 : a.site > b.site ? 1 : 0));
  }

  insertChange(change: Change): void {
    this.statement(
      `INSERT INTO changes (site, version, tbl, key, hlc, owner, deleted, body, sig)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      change.site,
      change.version,
      change.table,
      change.key,
      change.hlc,
      change.owner,
      change.deleted ? 1 : 0,
      change.body,
      change.sig ?? null,
    );
  }

  // Writes the row `change` names, if `statement`'s condition lets it; true when the row changed.
  putRow(
    spec: TableSpec,
    statement: StatementSync,
    change: Change,
    body: Record<string, unknown> | undefined,
  ): boolean {
    const params: SQLInputValue[] = [
      this.seq + 1,
      change.key,
      change.deleted ? 1 : 0,
      change.hlc,
      change.site,
      change.version,
      change.owner,
    ];
    for (const field of spec.filters) params.push(filterValue(body, field));
    if (Number(statement.run(...params).changes) === 0) return false;
    this.seq += 1;
    return true;
  }

  rowWriters(spec: TableSpec): RowWriters {
    let writers = this.writers.get(spec.name);
    if (writers === undefined) {
      const columns = [
        "seq",
        "key",
        "deleted",
        "hlc",
        "site",
        "version",
        "owner",
        ...spec.filters.map(filterColumn),
      ];
      const updates = columns.filter((c) => c !== "key").map((c) => `${c} = excluded.${c}`).join(", ");
      const upsert = `INSERT INTO ${spec.name} (${columns.join(", ")}) VALUES (${
        columns.map(() => "?").join(", ")
      })
        ON CONFLICT (key) DO UPDATE SET ${updates}`;
      const row = spec.name;
      writers = {
        local: this.db.prepare(`${upsert} WHERE ${row}.owner = excluded.owner`),
        merge: this.db.prepare(
          `${upsert} WHERE excluded.hlc > ${row}.hlc OR (excluded.hlc = ${row}.hlc AND excluded.site > ${row}.site)`,
        ),
      };
      this.writers.set(spec.name, writers);
    }
    return writers;
  }

  // Last writer wins on (hlc, site) for every table, decided in the upsert; ownership was already checked on the
  // change itself.
  merge(change: Change, body: Record<string, unknown> | undefined): void {
    const spec = TABLES[change.table];
    if (spec === undefined) return;
    this.putRow(spec, this.rowWriters(spec).merge, change, body);
  }

  rowOwner(table: string, key: string): string | undefined {
    const row = this.statement(`SELECT owner FROM ${table} WHERE key = ?`).get(key);
    return row === undefined ? undefined : String(row.owner);
  }

  /** @internal Reads a live body's JSON text. */
  readBody(table: string, key: string): string | undefined {
    this.assertOpen();
    const row = this.statement(
      `SELECT c.body FROM ${table} r JOIN changes c ON c.site = r.site AND c.version = r.version
       WHERE r.key = ? AND r.deleted = 0`,
    ).get(key);
    return row === undefined ? undefined : String(row.body);
  }

  /** The key a site's changes must be signed with: its own, an anchor the join brought, or its admission. */
  trustedKey(site: string): string | undefined {
    if (site === this.siteId && this.signer !== undefined) return this.signer.publicKey;
    const anchor = this.anchors[site];
    if (anchor !== undefined) return anchor;
    const cached = this.admittedKeys.get(site);
    if (cached !== undefined) return cached;
    const text = this.closed ? undefined : this.readBody("members", site);
    if (text === undefined) return undefined;
    const member = parseBodyText(text);
    const key = typeof member === "string" ? undefined : member.signing_key;
    if (typeof key !== "string" || !SIGNING_KEY_PATTERN.test(key)) return undefined;
    if (this.admittedKeys.size >= 4096) this.admittedKeys.clear();
    this.admittedKeys.set(site, key);
    return key;
  }
}
