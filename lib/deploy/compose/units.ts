/**
 * Go-style durations (`1m30s`, `10s`, `500ms`) and Docker byte sizes (`512m`, `1.5GiB`), as Compose writes
 * them.
 *
 * @module
 */

const DURATION_UNITS: Record<string, number> = {
  ns: 0.000001,
  us: 0.001,
  "µs": 0.001,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const BYTE_UNITS: Record<string, number> = {
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
  t: 1024 ** 4,
  tb: 1024 ** 4,
  tib: 1024 ** 4,
};

/**
 * Parses a duration into whole milliseconds (fractions below a millisecond are dropped). Returns an
 * error message instead when the text is not a duration.
 */
export function parseDurationMs(text: string): number | { error: string } {
  if (text === "0") return 0;
  const expected =
    `invalid duration "${text}": expected a number with a unit (h, m, s, ms, us, ns) such as "1m30s"`;
  if (text === "") return { error: expected };
  const part = /^(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/;
  let rest = text;
  let total = 0;
  while (rest !== "") {
    const match = part.exec(rest);
    if (match === null) return { error: expected };
    total += Number(match[1]) * DURATION_UNITS[match[2]];
    rest = rest.slice(match[0].length);
  }
  if (!Number.isFinite(total) || total > Number.MAX_SAFE_INTEGER) return { error: expected };
  return Math.floor(total);
}

/**
 * Writes whole milliseconds as {@linkcode parseDurationMs} reads them, largest units first (`1h`, `1m30s`,
 * `1s500ms`, `0s`), for messages that name a bound in the syntax the operator writes.
 */
export function formatDurationMs(ms: number): string {
  if (ms === 0) return "0s";
  let rest = Math.floor(ms);
  let text = "";
  for (const [unit, size] of [["h", 3_600_000], ["m", 60_000], ["s", 1000], ["ms", 1]] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) text += `${n}${unit}`;
    rest -= n * size;
  }
  return text;
}

/**
 * Parses a byte size: a plain integer is bytes; a number with a unit (`b`, `k`, `kb`, `kib`, `m`, `g`, `t`,
 * any case) uses powers of 1024, as Docker does. Returns an error message instead when it is not a size.
 */
export function parseBytes(text: string): number | { error: string } {
  const match = /^(\d+(?:\.\d+)?)\s*([a-zA-Z]*)$/.exec(text.trim());
  const expected =
    `invalid byte size "${text}": expected a number with an optional unit such as "512m" or "2g"`;
  if (match === null) return { error: expected };
  const unit = match[2].toLowerCase();
  const multiplier = unit === "" ? 1 : BYTE_UNITS[unit];
  if (multiplier === undefined) return { error: expected };
  if (unit === "" && match[1].includes(".")) return { error: expected };
  const value = Math.floor(Number(match[1]) * multiplier);
  if (!Number.isSafeInteger(value)) return { error: expected };
  return value;
}
