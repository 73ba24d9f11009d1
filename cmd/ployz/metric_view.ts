// Shared by `ployz top` and `ployz metrics`: metric history from every Machine through Machine RPC, durations,
// and how values read.
import { CliError } from "../../lib/cli/mod.ts";
import type { MetricName } from "../../lib/observe/mod.ts";
import type {
  MetricHistoryRequest,
  MetricHistoryResponse,
  MetricValueWire,
  PartialResult,
} from "../../lib/rpc/mod.ts";
import { askAll, clusterTargets } from "./cluster_targets.ts";

/** Asks every Machine (or the one named) for metric history; a Machine that did not answer is a failure. */
export async function historyAll(
  request: MetricHistoryRequest,
  machine?: string,
): Promise<PartialResult<MetricHistoryResponse>> {
  using targets = await clusterTargets({ machine });
  return await askAll(targets, (client, _m, signal) => client.metricHistory(request, { signal }));
}

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Milliseconds of a duration such as `90s`, `30m`, `24h` or `7d`; throws a usage error. */
export function parseDuration(option: string, text: string): number {
  const match = text.trim().match(/^(\d+)([smhd])$/);
  if (match === null || Number(match[1]) === 0) {
    throw new CliError(
      "invalid_argument",
      `Invalid value "${text}" for "${option}": expected a duration such as "30m", "24h" or "7d"`,
      { exitCode: 2 },
    );
  }
  return Number(match[1]) * UNITS[match[2]];
}

/** The number a point value reads as (a gauge's average, a delta's total); `undefined` for a gap. */
export function numberOf(value: MetricValueWire | undefined): number | undefined {
  if (value === undefined || "gap" in value) return undefined;
  return "avg" in value ? value.avg : value.sum;
}

/** A metric's value for people; a gap shows its reason, never a zero. */
export function formatValue(metric: MetricName, value: number | undefined, perSecond = false): string {
  if (value === undefined) return "-";
  switch (metric) {
    case "cpu":
    case "load1":
      return value.toFixed(2);
    case "restarts":
      return String(Math.round(value));
    default:
      return `${bytes(value)}${perSecond ? "/s" : ""}`;
  }
}

/** Bytes in binary units. */
export function bytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return i === 0 ? `${Math.round(n)} ${units[i]}` : `${n.toFixed(1)} ${units[i]}`;
}

/** `-` or `gap: reason` for a gap. */
export function gapText(value: MetricValueWire | undefined): string | undefined {
  return value !== undefined && "gap" in value ? `gap: ${value.gap}` : undefined;
}
