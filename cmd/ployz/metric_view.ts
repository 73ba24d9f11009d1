// Shared by `ployz top` and `ployz metrics`: the local observe.sock, durations, and how values read.
import { join } from "node:path";
import { CliError } from "../../lib/cli/mod.ts";
import {
  fetchMetricHistory,
  type MetricHistoryWireRequest,
  type MetricName,
  ObserveError,
  type PointValue,
  type WireMetricHistory,
} from "../../lib/observe/mod.ts";
import { layoutFromEnv } from "../../lib/permissions/mod.ts";

/** Said on every answer until Machine RPC fans these queries out. */
export const THIS_MACHINE_ONLY = "(this Machine only)";

/** `$PLOYZ_RUN_DIR/observe.sock`. */
export function observeSocket(): string {
  return join(layoutFromEnv((key) => Deno.env.get(key)).runDir, "observe.sock");
}

/** Asks the local Observe Store; its refusals become CLI errors. */
export async function history(request: MetricHistoryWireRequest): Promise<WireMetricHistory> {
  try {
    return await fetchMetricHistory(observeSocket(), request);
  } catch (error) {
    if (error instanceof ObserveError) {
      const hint = error.code === "unavailable" ? ' (is "ployzd observe" running on this Machine?)' : "";
      throw new CliError(error.code, `${error.message}${hint}`, { details: error.details });
    }
    throw error;
  }
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
export function numberOf(value: PointValue | undefined): number | undefined {
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
export function gapText(value: PointValue | undefined): string | undefined {
  return value !== undefined && "gap" in value ? `gap: ${value.gap}` : undefined;
}
