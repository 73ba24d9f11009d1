/**
 * Compacting a store's log below each site's floor, and ending a full sync from a peer whose floors are above
 * this replica's vector.
 *
 * @module
 */

import { SITE_ID_PATTERN } from "./change.ts";
import { StoreError } from "./errors.ts";
import { encodeHlc, MAX_CLOCK_SKEW_MS } from "./hlc.ts";
import type { StoreCore } from "./store_core.ts";
import type { CompactResult } from "./store_types.ts";
import { TABLES } from "./tables.ts";
import { holds, impossibleClaim, type VersionVector } from "./vector.ts";

/**
 * Removes from the log what no replica needs any more: changes older than `horizonMs` that a newer change
 * superseded, and tombstones older than it (with their rows, for entity tables). Only versions below a site's
 * contiguous watermark
 * go, and each site's floor rises past them, so a peer whose vector is below a floor (it was cut off longer
 * than the horizon) knows it must take a full copy ({@linkcode Store.completeFullSync}). Admissions and tables
 * this release does not know are kept whole.
 */
export function compact(core: StoreCore, options: { horizonMs: number }): CompactResult {
  core.assertOpen();
  const horizon = encodeHlc({ ms: Math.max(0, Math.floor(core.now()) - options.horizonMs), counter: 0 });
  const result: CompactResult = { superseded: 0, tombstones: 0 };
  core.transaction(() => {
    // The own site's entry is refreshed here: its floor must be readable, and its count survive a reopen. A
    // Machine that never wrote gets none, so its vector does not name itself at 0.
    if (core.ownVersion > 0) {
      core.statement(
        `INSERT INTO sites (site, contiguous, max) VALUES (?, ?, ?) ON CONFLICT (site) DO UPDATE SET
         contiguous = MAX(contiguous, excluded.contiguous), max = MAX(max, excluded.max)`,
      ).run(core.siteId, core.ownContiguous, core.ownVersion);
    }
    const floors = new Map<string, number>();
    const note = (site: unknown, version: unknown): void => {
      floors.set(String(site), Math.max(floors.get(String(site)) ?? 0, Number(version)));
    };
    // Each site's latest change held stays, even superseded or a tombstone: a floor is then always followed by
    // a change its site signed, which is how a replica taking a full copy tells a true floor from an invented one.
    const below = (alias: string): string =>
      `${alias}.version <= coalesce((SELECT contiguous FROM sites s WHERE s.site = ${alias}.site), 0)
       AND ${alias}.version < (SELECT max(l.version) FROM changes l WHERE l.site = ${alias}.site)`;
    for (const spec of Object.values(TABLES)) {
      if (spec.name === "members") continue;
      const table = spec.name;
      const superseded = `FROM changes AS c WHERE c.tbl = '${table}' AND c.hlc < ? AND ${below("c")}
        AND (c.site, c.version) NOT IN (SELECT site, version FROM ${table})`;
      for (
        const row of core.db.prepare(`SELECT c.site, max(c.version) AS v ${superseded} GROUP BY c.site`)
          .all(horizon)
      ) {
        note(row.site, row.v);
      }
      result.superseded += Number(
        core.db.prepare(
          `DELETE FROM changes WHERE (site, version) IN (SELECT c.site, c.version ${superseded})`,
        )
          .run(horizon).changes,
      );
      // A tombstone's change goes only when it is the last change of its key held. An entity row goes with
      // it (only its owner writes it, in version order, so no older change can come back above the floor);
      // a name-keyed row stays as a bare tombstone row (key, clock, no body), so a stale write from a Machine
      // cut off longer than the horizon still loses to it.
      const entity = spec.kind === "entity";
      const lastChange =
        `r.key IN (SELECT key FROM changes WHERE tbl = '${table}' GROUP BY key HAVING count(*) = 1)
        AND EXISTS (SELECT 1 FROM changes c WHERE c.site = r.site AND c.version = r.version)`;
      const dead = core.db.prepare(
        `SELECT r.key, r.site, r.version FROM ${table} AS r WHERE r.deleted = 1 AND r.hlc < ? AND ${
          below("r")
        }
         AND ((${lastChange})${
          entity ? ` OR r.key NOT IN (SELECT key FROM changes WHERE tbl = '${table}')` : ""
        })`,
      ).all(horizon);
      const dropChange = core.statement(`DELETE FROM changes WHERE site = ? AND version = ?`);
      const dropRow = core.statement(`DELETE FROM ${table} WHERE key = ?`);
      for (const row of dead) {
        dropChange.run(row.site as string, row.version as number);
        if (entity) dropRow.run(row.key as string);
        note(row.site, row.version);
        result.tombstones += 1;
      }
    }
    const raise = core.statement(`UPDATE sites SET floor = MAX(floor, ?) WHERE site = ?`);
    for (const [site, version] of floors) raise.run(version, site);
  });
  // The freed pages are reused by later writes; the write-ahead log is folded in so it does not keep them too.
  if (result.superseded + result.tombstones > 0) checkpoint(core);
  return result;
}

/** Folds the write-ahead log into the main file and truncates it. */
export function checkpoint(core: StoreCore): void {
  core.assertOpen();
  core.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
}

/** Each site's floor above 0: versions up to it missing from the log were compacted (or never needed). */
export function floors(core: StoreCore): Record<string, number> {
  core.assertOpen();
  const floors: Record<string, number> = {};
  for (const row of core.statement(`SELECT site, floor FROM sites WHERE floor > 0`).all()) {
    floors[String(row.site)] = Number(row.floor);
  }
  return floors;
}

/**
 * Ends a full sync: the caller pulled every change a peer held (applied as usual) and passes what the peer
 * said at the start — its vector and floors — and the `table\0key` of every change it sent.
 * A row here that the peer's vector covers but the peer sent nothing for was deleted there and its tombstone
 * compacted: it becomes a tombstone here too, its changes leave the log. Then this replica holds what the peer
 * held, so it adopts the peer's watermarks and floors. Returns how many rows it deleted.
 *
 * The peer's word is checked against what arrived before anything is adopted, so a peer that lies about what it
 * holds can neither make this replica skip versions nor delete a row newer than the horizon: every version the peer claims above its
 * floor must be held here now; a row is buried only when all its covered changes lie at or below the floors; a
 * floor must be followed by a change its site signed (compaction keeps each site's latest) and must not cover
 * a change newer than the compaction horizon (`horizonMs`, the Cluster's, default 7 days:
 * compaction takes nothing newer, on a clock at most {@linkcode MAX_CLOCK_SKEW_MS} ahead); every Machine it names
 * must be admitted here; and a floor must lie under the peer's own watermark. A claim failing any of these is
 * refused whole with `conflict` and nothing changes; the changes pulled stay, each verified alone.
 */
export function completeFullSync(
  core: StoreCore,
  peer: { vector: VersionVector; floors: Record<string, number> },
  seen: ReadonlySet<string>,
  options: { horizonMs?: number } = {},
): number {
  core.assertOpen();
  const lie = (reason: string): StoreError =>
    new StoreError("conflict", `Refused the peer's full copy: ${reason}`);
  const impossible = impossibleClaim(peer.vector, peer.floors);
  if (impossible !== undefined) throw lie(impossible);
  const floorOf = (site: string): number =>
    Math.min(Math.max(0, Math.floor(peer.floors[site] ?? 0)), peer.vector[site]?.c ?? 0);
  const horizonMs = options.horizonMs ?? 7 * 24 * 60 * 60 * 1000;
  const recentMs = Math.floor(core.now()) - horizonMs + MAX_CLOCK_SKEW_MS;
  const recent = recentMs <= 0
    ? undefined
    : encodeHlc({ ms: Math.min(recentMs, 0xffffffffffff), counter: 0 });
  let removed = 0;
  const seqBefore = core.seq;
  try {
    core.transaction(() => {
      const count = core.statement(
        `SELECT count(*) AS n FROM changes WHERE site = ? AND version BETWEEN ? AND ?`,
      );
      const ownFloor = core.statement(`SELECT floor FROM sites WHERE site = ?`);
      const latest = core.statement(`SELECT max(version) AS v FROM changes WHERE site = ?`);
      const firstRecent = core.statement(
        `SELECT min(version) AS v FROM changes WHERE site = ? AND hlc >= ?`,
      );
      for (const [site, held] of Object.entries(peer.vector)) {
        if (site !== core.siteId && core.signer !== undefined && core.trustedKey(site) === undefined) {
          throw lie(`it names Machine "${site}", which is not admitted here`);
        }
        const floor = floorOf(site);
        // Versions at or below either floor were compacted (there or here); every other one must be held now.
        const below = Math.max(floor, Number(ownFloor.get(site)?.floor ?? 0));
        for (const [from, to] of [[below + 1, held.c], ...(held.r ?? [])]) {
          const lo = Math.max(from, below + 1);
          if (to < lo) continue;
          const missing = to - lo + 1 - Number(count.get(site, lo, to)?.n ?? 0);
          if (missing > 0) {
            throw lie(
              `it claims versions ${lo}..${to} of Machine "${site}" and ${missing} of them are not held here (never sent, or refused)`,
            );
          }
        }
        // Compaction keeps each site's latest change, so a true floor is followed by a change of its site, signed
        // by it, that the peer sent (or this replica held): a floor past every such change was invented.
        if (floor > 0 && Number(latest.get(site)?.v ?? 0) <= floor) {
          throw lie(`its floor ${floor} for Machine "${site}" is followed by no change of it`);
        }
        // A site's clock only moves forward with its versions, so a version at or below a floor is no newer
        // than the compacted change the floor names.
        const first = recent === undefined || floor === 0 ? null : firstRecent.get(site, recent)?.v;
        if (typeof first === "number" && first <= floor) {
          throw lie(
            `its floor ${floor} for Machine "${site}" covers version ${first}, newer than the compaction horizon`,
          );
        }
      }
      const raised = new Map<string, number>();
      const changesOf = core.statement(`SELECT site, version FROM changes WHERE tbl = ? AND key = ?`);
      const forget = core.statement(`DELETE FROM changes WHERE site = ? AND version = ?`);
      for (const spec of Object.values(TABLES)) {
        const stale = core.db.prepare(`SELECT key, site, version FROM ${spec.name} WHERE deleted = 0`)
          .all()
          .filter((r) =>
            !seen.has(`${spec.name}\0${r.key}`) && holds(peer.vector[String(r.site)], Number(r.version))
          );
        const bury = core.statement(`UPDATE ${spec.name} SET deleted = 1, seq = ? WHERE key = ?`);
        for (const row of stale) {
          const key = String(row.key);
          // The peer sends every change it holds above its floors: one it covers above them it would have sent.
          const covered = changesOf.all(spec.name, key)
            .map((c) => ({ site: String(c.site), version: Number(c.version) }))
            .filter((c) => holds(peer.vector[c.site], c.version));
          const kept = covered.find((c) => c.version > floorOf(c.site));
          if (kept !== undefined) {
            throw lie(
              `it holds ${spec.name} row "${
                key.slice(0, 128)
              }" (Machine "${kept.site}" version ${kept.version}) above its floor but did not send it`,
            );
          }
          core.seq += 1;
          bury.run(core.seq, key);
          for (const c of covered) {
            forget.run(c.site, c.version);
            raised.set(c.site, Math.max(raised.get(c.site) ?? 0, c.version));
          }
          removed += 1;
        }
      }
      const adopt = core.statement(
        `INSERT INTO sites (site, contiguous, max, floor) VALUES (?, ?, ?, ?) ON CONFLICT (site) DO UPDATE SET
         contiguous = MAX(contiguous, excluded.contiguous), max = MAX(max, excluded.max),
         floor = MAX(floor, excluded.floor)`,
      );
      for (const [site, held] of Object.entries(peer.vector)) {
        if (site === core.siteId || !SITE_ID_PATTERN.test(site)) continue;
        adopt.run(site, held.c, held.c, floorOf(site));
        core.advance(site, held.c);
      }
      // This Machine's own changes the peer compacted left the log here too: its floor says so, so a replica
      // taking a full copy from this one finds no gap above it.
      const own = raised.get(core.siteId);
      if (own !== undefined) adopt.run(core.siteId, core.ownContiguous, core.ownVersion, own);
    });
  } catch (error) {
    core.seq = seqBefore;
    throw error;
  }
  if (core.seq > seqBefore) core.emit({ seq: core.seq, changes: [], origin: "remote", pulled: true });
  return removed;
}
