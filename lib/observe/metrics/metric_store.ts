/**
 * The metric half of the Observe Store, over the Log Store's database: raw rounds (24 h), markers (24 h) and
 * 5 minute Rollups per Service, Deployment and the Machine (90 days). Each closed hour of raw samples is folded
 * into Rollups once ({@link MetricStore.maintain}); a removed container's history stays under its Service until
 * its Rollups expire.
 *
 * @module
 */

import type { DatabaseSync, SQLOutputValue, StatementSync } from "node:sqlite";
import { type ContainerIdentity, IDENTITY_COLUMN_NAMES, identityValues } from "../containers.ts";
import { type GapReason, isGap } from "./gaps.ts";
import { bucketize, type GroupLabels, type RawMarker, type RawSample, type Scope } from "./grouping.ts";
import { type MetricName, METRICS, type Values } from "./metric_names.ts";
import type { Acc, Bucket } from "./rollup.ts";
import type { SampleRound } from "./sampler.ts";

/** Raw samples and markers are kept this long: 24 h. */
export const RAW_RETENTION_MS = 24 * 3600_000;
/** Rollups are kept this long: 90 days. */
export const ROLLUP_RETENTION_MS = 90 * 24 * 3600_000;
/** A Rollup's width: 5 minutes. */
export const ROLLUP_STEP_MS = 5 * 60_000;
const HOUR_MS = 3600_000;
const FOLDED_KEY = "metrics_folded_until_ms";

/** Which samples a read selects; absent fields match everything. */
export interface SubjectFilter {
  /** `ployz.project`. */
  project?: string;
  /** `ployz.service`. */
  service?: string;
  /** `ployz.deployment`. */
  deployment?: string;
}

/** What one {@link MetricStore.maintain} did. */
export interface MaintainReport {
  /** Closed hours folded into Rollups. */
  hoursFolded: number;
  /** Raw samples and markers past 24 h deleted. */
  rawDeleted: number;
  /** Rollups past 90 days deleted. */
  rollupsDeleted: number;
}

/** A stored Rollup with its group. */
export interface StoredRollup {
  /** The group. */
  labels: GroupLabels;
  /** The bucket. */
  bucket: Bucket;
}

const MACHINE_IDENTITY: ContainerIdentity = {
  containerId: "",
  name: "",
  machineId: "",
  project: "",
  service: "",
  deployment: "",
  slot: "",
};

/** The metric tables; see the module doc. */
export class MetricStore {
  readonly #db: DatabaseSync;
  readonly #keys = new Map<string, number>();
  readonly #insertSample: StatementSync;
  readonly #insertMarker: StatementSync;
  readonly #upsertSubject: StatementSync;

  /** Wraps the Observe Store's open database (see `openLogStore`). */
  constructor(db: DatabaseSync) {
    this.#db = db;
    this.#insertSample = db.prepare(
      `INSERT INTO metric_samples (time_ms, subject, ${METRICS.join(", ")}, gaps)
       VALUES (?, ?, ${METRICS.map(() => "?").join(", ")}, ?)`,
    );
    this.#insertMarker = db.prepare(
      "INSERT INTO metric_markers (time_ms, subject, kind, at_ms, detail) VALUES (?, ?, ?, ?, ?)",
    );
    this.#upsertSubject = db.prepare(
      `INSERT INTO metric_subjects (kind, ${IDENTITY_COLUMN_NAMES}, first_seen_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (container_id) DO UPDATE SET gone_ms = NULL, name = excluded.name,
         machine_id = CASE WHEN excluded.machine_id = '' THEN machine_id ELSE excluded.machine_id END
       RETURNING key`,
    );
  }

  /** Stores one round: every subject's values and markers, and which containers went, in one transaction. */
  record(round: SampleRound): void {
    const db = this.#db;
    db.exec("BEGIN IMMEDIATE");
    try {
      // The Machine is known by the label its containers carry, once one carries it.
      const machineId = round.containers.find((c) => c.identity.machineId !== "")?.identity.machineId ?? "";
      const machineKey = this.#subject(
        "machine",
        { ...MACHINE_IDENTITY, machineId },
        round.timeMs,
        machineId,
      );
      this.#insertSample.run(round.timeMs, machineKey, ...columns(round.machine));
      for (const c of round.containers) {
        const key = this.#subject("container", c.identity, round.timeMs);
        this.#insertSample.run(round.timeMs, key, ...columns(c.values));
        for (const m of c.markers) this.#insertMarker.run(round.timeMs, key, m.kind, m.atMs, m.detail);
        if (c.gone) {
          db.prepare("UPDATE metric_subjects SET gone_ms = ? WHERE key = ?").run(round.timeMs, key);
          this.#keys.delete(c.identity.containerId);
        }
      }
      db.exec("COMMIT");
    } catch (error) {
      db.exec("ROLLBACK");
      this.#keys.clear();
      throw error;
    }
  }

  #subject(kind: string, identity: ContainerIdentity, nowMs: number, machineId?: string): number {
    const cacheKey = machineId === undefined ? identity.containerId : `\u0000machine:${machineId}`;
    const known = this.#keys.get(cacheKey);
    if (known !== undefined) return known;
    const row = this.#upsertSubject.get(kind, ...identityValues(identity), nowMs)!;
    const key = Number(row.key);
    if (machineId !== undefined) {
      for (const k of this.#keys.keys()) if (k.startsWith("\u0000machine:")) this.#keys.delete(k);
    }
    this.#keys.set(cacheKey, key);
    return key;
  }

  /** Where folding stopped: every hour before it is in Rollups; `undefined` before the first fold. */
  foldedUntilMs(): number | undefined {
    const row = this.#db.prepare("SELECT value FROM meta WHERE key = ?").get(FOLDED_KEY);
    return row === undefined ? undefined : Number(row.value);
  }

  /** Folds every closed hour not folded yet into Rollups, then deletes what passed its retention. */
  maintain(nowMs: number = Date.now()): MaintainReport {
    const report: MaintainReport = { hoursFolded: 0, rawDeleted: 0, rollupsDeleted: 0 };
    const closed = Math.floor(nowMs / HOUR_MS) * HOUR_MS;
    let from = this.foldedUntilMs();
    for (;;) {
      // Skip empty hours: the next hour to fold is the one holding the next sample.
      const next = this.#db.prepare("SELECT min(time_ms) AS t FROM metric_samples WHERE time_ms >= ?")
        .get(from ?? 0)!.t;
      if (next === null || Number(next) >= closed) break;
      const hour = Math.floor(Number(next) / HOUR_MS) * HOUR_MS;
      this.#foldHour(hour);
      report.hoursFolded++;
      from = hour + HOUR_MS;
    }
    if (from === undefined || from < closed) this.#setFolded(closed);
    const db = this.#db;
    const rawCut = nowMs - RAW_RETENTION_MS;
    report.rawDeleted =
      Number(db.prepare("DELETE FROM metric_samples WHERE time_ms < ?").run(rawCut).changes) +
      Number(db.prepare("DELETE FROM metric_markers WHERE time_ms < ?").run(rawCut).changes);
    report.rollupsDeleted = Number(
      db.prepare("DELETE FROM metric_rollups WHERE bucket_ms < ?").run(nowMs - ROLLUP_RETENTION_MS).changes,
    );
    if (report.rawDeleted > 0) this.#dropGoneSubjects();
    return report;
  }

  #setFolded(untilMs: number): void {
    this.#db.prepare(
      "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    )
      .run(FOLDED_KEY, String(untilMs));
  }

  #foldHour(hourMs: number): void {
    const db = this.#db;
    const samples = this.rawSamples(hourMs, hourMs + HOUR_MS, {});
    const markers = this.rawMarkers(hourMs, hourMs + HOUR_MS, {});
    const insert = db.prepare(
      `INSERT OR REPLACE INTO metric_rollups (bucket_ms, scope, machine_id, project, service, deployment, rounds,
         samples, gap_count, ${METRICS.flatMap((m) => [`${m}_n`, `${m}_sum`, `${m}_max`]).join(", ")},
         starts, dies, ooms, health_changes, gaps)
       VALUES (${Array(9 + METRICS.length * 3 + 5).fill("?").join(", ")})`,
    );
    db.exec("BEGIN IMMEDIATE");
    try {
      for (const scope of ["service", "deployment", "machine"] as const) {
        for (const group of bucketize(scope, ROLLUP_STEP_MS, samples, markers).values()) {
          const l = group.labels;
          for (const b of group.buckets.values()) {
            insert.run(
              b.startMs,
              scope,
              l.machineId,
              l.project,
              l.service,
              l.deployment,
              b.rounds,
              b.samples,
              b.gapCount,
              ...METRICS.flatMap((m) => {
                const acc = b.metrics[m];
                return acc === undefined ? [0, null, null] : [acc.n, acc.sum, acc.max];
              }),
              b.markers.start,
              b.markers.die,
              b.markers.oom,
              b.markers.health,
              JSON.stringify(b.gaps),
            );
          }
        }
      }
      this.#setFolded(hourMs + HOUR_MS);
      db.exec("COMMIT");
    } catch (error) {
      db.exec("ROLLBACK");
      throw error;
    }
  }

  /** Raw samples with `sinceMs ≤ time < untilMs`, in time order. */
  rawSamples(sinceMs: number, untilMs: number, filter: SubjectFilter): RawSample[] {
    const rows = this.#rawRows("metric_samples", "sub.kind", "subject", sinceMs, untilMs, filter);
    return rows.map((r) => {
      const values: Values = {};
      for (const m of METRICS) if (r[m] !== null) values[m] = Number(r[m]);
      if (r.gaps !== null) {
        const gaps = JSON.parse(String(r.gaps)) as Record<MetricName, GapReason>;
        for (const [m, reason] of Object.entries(gaps) as [MetricName, GapReason][]) {
          values[m] = { gap: reason };
        }
      }
      return {
        timeMs: Number(r.time_ms),
        kind: r.kind === "machine" ? "machine" : "container",
        containerId: String(r.container_id),
        machineId: String(r.machine_id),
        project: String(r.project),
        service: String(r.service),
        deployment: String(r.deployment),
        values,
      };
    });
  }

  /** Markers seen with `sinceMs ≤ time < untilMs`, in time order. */
  rawMarkers(sinceMs: number, untilMs: number, filter: SubjectFilter): RawMarker[] {
    const rows = this.#rawRows("metric_markers", "sub.name", "at_ms", sinceMs, untilMs, filter);
    return rows.map((r) => ({
      timeMs: Number(r.time_ms),
      kind: String(r.kind) as RawMarker["kind"],
      atMs: Number(r.at_ms),
      containerId: String(r.container_id),
      containerName: String(r.name),
      machineId: String(r.machine_id),
      project: String(r.project),
      service: String(r.service),
      deployment: String(r.deployment),
      detail: String(r.detail),
    }));
  }

  /**
   * Rows of a raw table (`metric_samples`, `metric_markers`) with `sinceMs ≤ time < untilMs`, each with its
   * subject's identity and `subjectColumn`, filtered by subject, ordered by time then `then`.
   */
  #rawRows(
    table: string,
    subjectColumn: string,
    then: string,
    sinceMs: number,
    untilMs: number,
    filter: SubjectFilter,
  ): Record<string, SQLOutputValue>[] {
    return this.#db.prepare(
      `SELECT t.*, ${subjectColumn}, sub.container_id, sub.machine_id, sub.project, sub.service, sub.deployment
       FROM ${table} t JOIN metric_subjects sub ON sub.key = t.subject
       WHERE t.time_ms >= ? AND t.time_ms < ? ${filterSql(filter, "sub")}
       ORDER BY t.time_ms, t.${then}`,
    ).all(sinceMs, untilMs, ...filterArgs(filter));
  }

  /** Rollups of `scope` with `sinceMs ≤ bucket < untilMs`, in time order. */
  rollups(scope: Scope, sinceMs: number, untilMs: number, filter: SubjectFilter): StoredRollup[] {
    const rows = this.#db.prepare(
      `SELECT * FROM metric_rollups r WHERE scope = ? AND bucket_ms >= ? AND bucket_ms < ? ${
        filterSql(filter, "r")
      } ORDER BY bucket_ms`,
    ).all(scope, sinceMs, untilMs, ...filterArgs(filter));
    return rows.map((r) => {
      const metrics: Partial<Record<MetricName, Acc>> = {};
      for (const m of METRICS) {
        const n = Number(r[`${m}_n`]);
        if (n > 0) metrics[m] = { n, sum: Number(r[`${m}_sum`]), max: Number(r[`${m}_max`]) };
      }
      return {
        labels: {
          machineId: String(r.machine_id),
          project: String(r.project),
          service: String(r.service),
          deployment: String(r.deployment),
        },
        bucket: {
          startMs: Number(r.bucket_ms),
          rounds: Number(r.rounds),
          samples: Number(r.samples),
          gapCount: Number(r.gap_count),
          metrics,
          gaps: JSON.parse(String(r.gaps)),
          markers: {
            start: Number(r.starts),
            die: Number(r.dies),
            oom: Number(r.ooms),
            health: Number(r.health_changes),
          },
        },
      };
    });
  }

  /** The oldest stored metric time (raw, marker or Rollup), in ns, or `undefined` when none is stored. */
  oldestTimeNano(): bigint | undefined {
    const row = this.#db.prepare(
      `SELECT min(t) AS t FROM (
         SELECT min(time_ms) AS t FROM metric_samples UNION ALL
         SELECT min(time_ms) FROM metric_markers UNION ALL
         SELECT min(bucket_ms) FROM metric_rollups)`,
    ).get()!;
    return row.t === null ? undefined : BigInt(Number(row.t)) * 1_000_000n;
  }

  /** Deletes every sample, marker and Rollup older than `cutNano`; returns how many rows went. */
  deleteBefore(cutNano: bigint): number {
    const cut = Number(cutNano / 1_000_000n);
    const db = this.#db;
    db.exec("BEGIN IMMEDIATE");
    let deleted = 0;
    try {
      deleted += Number(db.prepare("DELETE FROM metric_samples WHERE time_ms < ?").run(cut).changes);
      deleted += Number(db.prepare("DELETE FROM metric_markers WHERE time_ms < ?").run(cut).changes);
      deleted += Number(db.prepare("DELETE FROM metric_rollups WHERE bucket_ms < ?").run(cut).changes);
      db.exec("COMMIT");
    } catch (error) {
      db.exec("ROLLBACK");
      throw error;
    }
    this.#dropGoneSubjects();
    return deleted;
  }

  #dropGoneSubjects(): void {
    this.#db.exec(
      `DELETE FROM metric_subjects WHERE gone_ms IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM metric_samples WHERE subject = metric_subjects.key)
         AND NOT EXISTS (SELECT 1 FROM metric_markers WHERE subject = metric_subjects.key)`,
    );
  }
}

function columns(values: Values): (number | string | null)[] {
  const gaps: Partial<Record<MetricName, GapReason>> = {};
  const out: (number | string | null)[] = METRICS.map((m) => {
    const v = values[m];
    if (v === undefined) return null;
    if (isGap(v)) {
      gaps[m] = v.gap;
      return null;
    }
    return v;
  });
  out.push(Object.keys(gaps).length === 0 ? null : JSON.stringify(gaps));
  return out;
}

function filterSql(filter: SubjectFilter, table: string): string {
  return (["project", "service", "deployment"] as const)
    .filter((k) => filter[k] !== undefined)
    .map((k) => `AND ${table}.${k} = ?`)
    .join(" ");
}

function filterArgs(filter: SubjectFilter): string[] {
  return (["project", "service", "deployment"] as const).flatMap((k) => filter[k] ?? []);
}
