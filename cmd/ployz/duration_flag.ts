// Duration options (`--monitor 5s`, `--timeout 2m`), read one way and bounded: kept apart from flags.ts,
// which every command loads, since reading a duration loads the deploy area.
import { type CommandContext, UsageError } from "../../lib/cli/mod.ts";
import { formatDurationMs, parseDurationMs } from "../../lib/deploy/mod.ts";

/**
 * Duration option `name` (`90s`, `2m`: Compose's syntax) in ms, or undefined when it was not given; a value
 * that is not a duration, or is outside `min` (default 0) to `max`, is a usage error naming the option and
 * the bound.
 */
export function durationFlag(
  values: CommandContext["values"],
  name: string,
  bounds: { min?: number; max: number },
): number | undefined {
  const value = values[name];
  if (value === undefined) return undefined;
  const parsed = parseDurationMs(String(value));
  if (typeof parsed !== "number") throw new UsageError(`Invalid value for "--${name}": ${parsed.error}`);
  const min = bounds.min ?? 0;
  if (parsed < min) {
    throw new UsageError(`Invalid value for "--${name}": at least ${formatDurationMs(min)}, got "${value}"`);
  }
  if (parsed > bounds.max) {
    throw new UsageError(
      `Invalid value for "--${name}": at most ${formatDurationMs(bounds.max)}, got "${value}"`,
    );
  }
  return parsed;
}
