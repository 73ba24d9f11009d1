/**
 * The Observe Store's disk budget. Logs and metrics share it: when the store's pages pass `maxBytes`, or the file
 * system holding it has less free space than the floor, the oldest clock hour of data goes first — log lines,
 * raw Metric Samples, markers and Rollups of that hour together — then the next, until both limits hold or nothing
 * is left. Lines older than `maxAgeMs` go regardless (metrics keep their own retention, 24 h raw and 90 days of
 * Rollups).
 *
 * Defaults: `maxBytes` 512 MiB; the free floor is the larger of 1 GiB and 5 % of the file system's size, unless
 * `minFreeBytes` names it exactly. From the environment: `PLOYZ_OBSERVE_MAX_BYTES`, `PLOYZ_OBSERVE_MIN_FREE_BYTES`
 * (whole bytes, or with a `k`/`m`/`g` binary suffix such as `512m`).
 *
 * @module
 */

import { statfsSync } from "node:fs";
import { ObserveError } from "./errors.ts";
import type { LogStore } from "./log_store.ts";
import type { MetricStore } from "./metrics/metric_store.ts";

/** The limits. */
export interface DiskBudget {
  /** The store's size cap in bytes. */
  maxBytes: number;
  /** The exact free-space floor in bytes; default: the larger of 1 GiB and 5 % of the file system. */
  minFreeBytes?: number;
  /** The age cap in ms. Default 30 days. */
  maxAgeMs?: number;
}

/** Free and total bytes of a file system. */
export interface DiskSpace {
  /** Bytes an unprivileged writer can still use. */
  free: number;
  /** The file system's size. */
  total: number;
}

/** 512 MiB. */
export const DEFAULT_MAX_BYTES = 512 * 1024 * 1024;
/** 1 GiB: the free floor on file systems smaller than 20 GiB. */
export const DEFAULT_MIN_FREE_BYTES = 1024 * 1024 * 1024;
/** 5 %: the free floor's share of larger file systems. */
export const DEFAULT_MIN_FREE_RATIO = 0.05;
/** 30 days. */
export const DEFAULT_MAX_AGE_MS = 30 * 24 * 3600 * 1000;

const HOUR_NANO = 3_600_000_000_000n;

/** The free-space floor for a file system of `total` bytes. */
export function freeFloor(budget: DiskBudget, total: number): number {
  return budget.minFreeBytes ?? Math.max(DEFAULT_MIN_FREE_BYTES, Math.ceil(total * DEFAULT_MIN_FREE_RATIO));
}

/** Reads the budget from `PLOYZ_OBSERVE_MAX_BYTES` and `PLOYZ_OBSERVE_MIN_FREE_BYTES`; throws `invalid_argument`. */
export function budgetFromEnv(get: (key: string) => string | undefined): DiskBudget {
  const budget: DiskBudget = { maxBytes: DEFAULT_MAX_BYTES };
  const max = get("PLOYZ_OBSERVE_MAX_BYTES");
  if (max !== undefined && max !== "") budget.maxBytes = parseBytes("PLOYZ_OBSERVE_MAX_BYTES", max);
  const min = get("PLOYZ_OBSERVE_MIN_FREE_BYTES");
  if (min !== undefined && min !== "") budget.minFreeBytes = parseBytes("PLOYZ_OBSERVE_MIN_FREE_BYTES", min);
  return budget;
}

function parseBytes(key: string, value: string): number {
  const match = value.trim().toLowerCase().match(/^(\d+)([kmg]?)i?b?$/);
  if (match === null) {
    throw new ObserveError(
      "invalid_argument",
      `Cannot use ${key}="${value}": expected bytes such as "536870912" or "512m"`,
    );
  }
  const unit = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[match[2] as "" | "k" | "m" | "g"];
  return Number(match[1]) * unit;
}

/**
 * Free space of the file system holding `path`, or `undefined` when it cannot be read (without the `sys` grant
 * for `statfs`, only the size cap is enforced).
 */
export function diskSpace(path: string): DiskSpace | undefined {
  try {
    const s = statfsSync(path);
    return { free: Number(s.bavail) * Number(s.bsize), total: Number(s.blocks) * Number(s.bsize) };
  } catch {
    return undefined;
  }
}

/** What one enforcement did. */
export interface BudgetReport {
  /** Hours deleted because a limit was passed. */
  hoursDeleted: number;
  /** Lines deleted, for any reason. */
  linesDeleted: number;
  /** Metric rows (raw samples, markers, Rollups) deleted with the hours. */
  metricRowsDeleted: number;
  /** Which limit made it delete, if any. */
  reason: "size_cap" | "free_floor" | "age_cap" | undefined;
  /** Limits still passed after deleting everything the store held. */
  stillOver: boolean;
}

/**
 * Deletes data until the store is within `budget`: past-age lines first, then the oldest hour, again and again.
 * `disk` reads the file system's space (`undefined`: unknown, the free floor is not enforced). With `metrics`, the
 * oldest hour is the oldest of both kinds, and both lose it together.
 */
export function enforceBudget(
  store: LogStore,
  budget: DiskBudget,
  disk: () => DiskSpace | undefined,
  nowMs: number = Date.now(),
  metrics?: MetricStore,
): BudgetReport {
  const report: BudgetReport = {
    hoursDeleted: 0,
    linesDeleted: 0,
    metricRowsDeleted: 0,
    reason: undefined,
    stillOver: false,
  };
  const ageCut = BigInt(nowMs - (budget.maxAgeMs ?? DEFAULT_MAX_AGE_MS)) * 1_000_000n;
  const oldest = store.oldestTimeNano();
  if (oldest !== undefined && oldest < ageCut) {
    report.linesDeleted += store.deleteBefore(ageCut);
    report.reason = "age_cap";
  }
  for (;;) {
    const over = overBy(store, budget, disk());
    if (over === undefined) return report;
    const first = oldestOf(store.oldestTimeNano(), metrics?.oldestTimeNano());
    if (first === undefined) {
      report.stillOver = true;
      return report;
    }
    report.reason = over;
    const hourStart = first >= 0n ? (first / HOUR_NANO) * HOUR_NANO : first;
    // Metrics first: the Log Store's delete hands the freed pages of both back to the file system.
    report.metricRowsDeleted += metrics?.deleteBefore(hourStart + HOUR_NANO) ?? 0;
    report.linesDeleted += store.deleteBefore(hourStart + HOUR_NANO);
    report.hoursDeleted++;
  }
}

function oldestOf(a: bigint | undefined, b: bigint | undefined): bigint | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return a < b ? a : b;
}

function overBy(
  store: LogStore,
  budget: DiskBudget,
  space: DiskSpace | undefined,
): "size_cap" | "free_floor" | undefined {
  if (store.usedBytes() > budget.maxBytes) return "size_cap";
  if (space !== undefined && space.free < freeFloor(budget, space.total)) return "free_floor";
  return undefined;
}
