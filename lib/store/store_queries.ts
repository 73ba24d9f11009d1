/**
 * Reading a store: live rows and their changes, the version vector, what a peer lacks, what changed since a
 * sequence number, and the canonical dump.
 *
 * @module
 */

import type { SQLInputValue } from "node:sqlite";
import type { Change } from "./change.ts";
import { type ChangeRow, FIELD_PATTERN, filterColumn, toChange } from "./change_rows.ts";
import { StoreError } from "./errors.ts";
import type { StoreCore } from "./store_core.ts";
import type { ChangedKey, ChangePage, StoreChanges } from "./store_types.ts";
import { TABLES } from "./tables.ts";
import { holds, type SiteVersions, type VersionVector } from "./vector.ts";

/**
 * The change that wrote a live row as this replica holds it, as it travels (signed once it has left its
 * writer); `undefined` for no row or a tombstone. Read the table first (its `Table` creates it).
 */
export function rowChange(core: StoreCore, table: string, key: string): Change | undefined {
  core.assertOpen();
  if (TABLES[table] === undefined) return undefined;
  const row = core.statement(
    `SELECT c.* FROM ${table} r JOIN changes c ON c.site = r.site AND c.version = r.version
     WHERE r.key = ? AND r.deleted = 0`,
  ).get(key) as unknown as ChangeRow | undefined;
  return row === undefined ? undefined : toChange(row);
}

/** @internal Lists live bodies' JSON text, filtered on top-level fields. */
export function listBodies(core: StoreCore, table: string, where: Partial<Record<string, string>>): string[] {
  core.assertOpen();
  const filters = TABLES[table]?.filters ?? [];
  const clauses = ["r.deleted = 0"];
  const params: SQLInputValue[] = [];
  for (const [field, value] of Object.entries(where)) {
    if (value === undefined) continue;
    if (!FIELD_PATTERN.test(field)) {
      throw new StoreError(
        "invalid_argument",
        `Cannot filter ${table} on field "${field}": not a plain field name`,
      );
    }
    clauses.push(
      filters.includes(field) ? `r.${filterColumn(field)} = ?` : `json_extract(c.body, '$.${field}') = ?`,
    );
    params.push(value);
  }
  const sql = `SELECT c.body FROM ${table} r JOIN changes c ON c.site = r.site AND c.version = r.version
    WHERE ${clauses.join(" AND ")} ORDER BY r.key`;
  return core.statement(sql).all(...params).map((row) => String(row.body));
}

/** What this replica holds, per site. */
export function vector(core: StoreCore): VersionVector {
  core.assertOpen();
  const vector: VersionVector = {};
  const rows = core.sites();
  const islands = core.statement(
    `SELECT min(version) AS lo, max(version) AS hi FROM (
       SELECT version, version - row_number() OVER (ORDER BY version) AS island
       FROM changes WHERE site = ? AND version > ?)
     GROUP BY island ORDER BY lo`,
  );
  for (const row of rows) {
    const held: SiteVersions = { c: Number(row.contiguous) };
    if (Number(row.max) > held.c) {
      held.r = islands.all(String(row.site), held.c).map((r) => [Number(r.lo), Number(r.hi)]);
    }
    vector[String(row.site)] = held;
  }
  return vector;
}

/** Changes this replica holds that a replica with `theirs` lacks, up to `limit` changes or about `maxChars`. */
export function changesMissingFrom(
  core: StoreCore,
  theirs: VersionVector,
  limit = 5000,
  maxChars = 8 * 1024 * 1024,
): ChangePage {
  core.assertOpen();
  const changes: Change[] = [];
  let chars = 0;
  // Admissions lead every reply: a receiver refuses a Machine's changes until it holds that Machine's admission,
  // so a page of them ahead of it would be refused whole, again and again.
  const admissions = new Set<string>();
  for (
    const r of core.statement(`SELECT * FROM changes WHERE tbl = 'members'`)
      .all() as unknown as ChangeRow[]
  ) {
    if (holds(theirs[r.site], r.version) || changes.length >= limit) continue;
    changes.push(toChange(r));
    admissions.add(`${r.site}/${r.version}`);
    chars += 100 + r.key.length + (r.body?.length ?? 0);
  }
  const query = core.statement(
    `SELECT * FROM changes WHERE site = ? AND version > ? ORDER BY version LIMIT ?`,
  );
  for (const row of core.sites()) {
    const site = String(row.site);
    const held = theirs[site];
    if (held !== undefined && held.c >= Number(row.max)) continue;
    let after = held?.c ?? 0;
    for (;;) {
      const page = query.all(site, after, 1000) as unknown as ChangeRow[];
      for (const r of page) {
        after = r.version;
        if (holds(held, r.version) || admissions.has(`${r.site}/${r.version}`)) continue;
        if (changes.length >= limit || chars >= maxChars) return { changes, more: true };
        changes.push(toChange(r));
        chars += 100 + r.key.length + (r.body?.length ?? 0);
      }
      if (page.length < 1000) break;
    }
  }
  return { changes, more: false };
}

/** True when this replica holds every change `theirs` holds, e.g. a peer's vector a joiner waits for. */
export function caughtUpWith(core: StoreCore, theirs: VersionVector): boolean {
  core.assertOpen();
  const mine = vector(core);
  const count = core.statement(
    `SELECT count(*) AS n FROM changes WHERE site = ? AND version BETWEEN ? AND ?`,
  );
  for (const [site, held] of Object.entries(theirs)) {
    const own = mine[site];
    for (const [from, to] of [[1, held.c], ...(held.r ?? [])]) {
      if (to < from) continue;
      if (own !== undefined && own.c >= to) continue;
      if (Number(count.get(site, from, to)?.n ?? 0) !== to - from + 1) return false;
    }
  }
  return true;
}

/** Keys changed after local sequence number `seq`, per table, without reading whole tables. */
export function changesSince(core: StoreCore, seq: number): StoreChanges {
  core.assertOpen();
  const tables: Record<string, ChangedKey[]> = {};
  let last = seq;
  for (const spec of Object.values(TABLES)) {
    const rows = core.statement(`SELECT key, deleted, seq FROM ${spec.name} WHERE seq > ? ORDER BY seq`)
      .all(seq);
    if (rows.length === 0) continue;
    tables[spec.name] = rows.map((r) => ({ key: String(r.key), deleted: r.deleted === 1 }));
    for (const r of rows) last = Math.max(last, Number(r.seq));
  }
  return { seq: last, tables };
}

/** A canonical text of every table and the version vector; equal on replicas that converged. */
export function dump(core: StoreCore): string {
  core.assertOpen();
  const tables: Record<string, unknown[]> = {};
  for (const spec of Object.values(TABLES)) {
    tables[spec.name] = core.statement(
      `SELECT r.key, r.deleted, r.hlc, r.site, r.version, r.owner, c.body
       FROM ${spec.name} r LEFT JOIN changes c ON c.site = r.site AND c.version = r.version ORDER BY r.key`,
    ).all().map((r) => [r.key, r.deleted, r.hlc, r.site, r.version, r.owner, r.body]);
  }
  const log = core.statement(`SELECT count(*) AS n FROM changes`).get();
  return JSON.stringify({ tables, vector: vector(core), log: Number(log?.n ?? 0) });
}
