/**
 * Reading a lab Machine's replicated store file directly, read-only, as evidence for tests and benchmarks: which
 * rows it holds and a digest that is equal on two copies exactly when they hold the same rows and the same changes.
 * The daemon keeps writing meanwhile (WAL lets a reader see its last commit).
 *
 * @module
 */

import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { MachinePlan } from "../../lib/lab/mod.ts";

/** The tables a digest covers. */
export const DIGEST_TABLES = [
  "cluster",
  "machines",
  "containers",
  "volumes",
  "certificates",
  "serving_pointers",
  "acks",
];

/** The store file of a lab Machine's ployzd. */
export function storeFile(m: MachinePlan): string {
  return join(m.ployzDataDir ?? join(m.dir, "ployz"), "store.db");
}

function open(path: string): DatabaseSync {
  const db = new DatabaseSync(path, { readOnly: true, timeout: 5_000 });
  return db;
}

function hasTable(db: DatabaseSync, table: string): boolean {
  return db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(table) !== undefined;
}

/** Live rows (tombstones excluded) of one table, by key. */
export function readRows(path: string, table: string): Map<string, Record<string, unknown>> {
  const db = open(path);
  try {
    if (!hasTable(db, table) || !/^[a-z_]+$/.test(table)) return new Map();
    const rows = db.prepare(
      `SELECT r.key AS key, c.body AS body FROM ${table} r
       JOIN changes c ON c.site = r.site AND c.version = r.version WHERE r.deleted = 0`,
    ).all();
    return new Map(rows.map((r) => [String(r.key), JSON.parse(String(r.body)) as Record<string, unknown>]));
  } finally {
    db.close();
  }
}

/** Every row (tombstones included) with the change that won it, plus the change count: equal on converged copies. */
export function storeDigest(path: string): string {
  const db = open(path);
  try {
    const out: Record<string, unknown[]> = {};
    for (const table of DIGEST_TABLES) {
      if (!hasTable(db, table)) continue;
      out[table] = db.prepare(
        `SELECT r.key, r.deleted, r.hlc, r.site, r.version, c.body FROM ${table} r
         LEFT JOIN changes c ON c.site = r.site AND c.version = r.version ORDER BY r.key`,
      ).all().map((r) => [r.key, r.deleted, r.hlc, r.site, r.version, r.body]);
    }
    out.changes = [Number(db.prepare(`SELECT count(*) AS n FROM changes`).get()?.n ?? 0)];
    return JSON.stringify(out);
  } finally {
    db.close();
  }
}
