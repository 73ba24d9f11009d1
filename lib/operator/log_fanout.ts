// Merging LogHistory answers from many Machines into one time-ordered output, and reading TailLogs streams.
import { OperatorError } from "./errors.ts";
import {
  type LogHistoryResponse,
  type LogLineWire,
  type MachineRef,
  type PartialResult,
  readTailFrame,
  type TailFrame,
} from "../rpc/mod.ts";

/** A line with the Machine that answered with it. */
export interface MachineLine {
  /** The Machine that answered. */
  machine: MachineRef;
  /** The line. */
  line: LogLineWire;
}

/** The merged answer of a fanned-out LogHistory. */
export interface MergedHistory {
  /** Lines of every Machine that answered, oldest first, at most `limit`. */
  lines: MachineLine[];
  /** Older lines were left out, by a Machine's own limit or by the merge. */
  truncated: boolean;
  /** Each Machine's notes, prefixed with its name. */
  notes: string[];
}

/** Orders two lines by time, then Machine name, then container, keeping each Machine's own order on ties. */
function compareLines(a: MachineLine, b: MachineLine): number {
  const ta = BigInt(a.line.time_nano);
  const tb = BigInt(b.line.time_nano);
  if (ta !== tb) return ta < tb ? -1 : 1;
  if (a.machine.name !== b.machine.name) return a.machine.name < b.machine.name ? -1 : 1;
  if (a.machine.id !== b.machine.id) return a.machine.id < b.machine.id ? -1 : 1;
  return 0;
}

/** Merges each Machine's lines in time order and keeps the newest `limit`. */
export function mergeHistory(result: PartialResult<LogHistoryResponse>, limit: number): MergedHistory {
  const all: MachineLine[] = [];
  const notes: string[] = [];
  let truncated = false;
  for (const { machine, value } of result.successes) {
    for (const line of value.lines) all.push({ machine, line });
    for (const note of value.notes) notes.push(`Machine "${machine.name}": ${note}`);
    truncated ||= value.truncated;
  }
  // Stable sort keeps a Machine's own order among equal keys.
  all.sort(compareLines);
  if (all.length > limit) truncated = true;
  return { lines: all.slice(Math.max(0, all.length - limit)), truncated, notes };
}

/** A line for people: UTC time with milliseconds, Machine, container, then the text. */
export function renderLine(entry: MachineLine): string {
  const { line } = entry;
  const nanos = BigInt(line.time_nano);
  const time = new Date(Number(nanos / 1_000_000n)).toISOString();
  const container = line.container_name ?? line.container_id.slice(0, 12);
  return `${time} ${entry.machine.name} ${container}${
    line.stream === "stderr" ? " (stderr)" : ""
  } | ${line.text}\n`;
}

/** A line for `--json`: the wire line with the answering Machine named. */
export function lineJson(entry: MachineLine): Record<string, unknown> {
  return { ...entry.line, "machine_name": entry.line.machine_name ?? entry.machine.name };
}

/** A key that tells a line from any other line of the same container. */
export function lineKey(line: LogLineWire): string {
  return `${line.container_id}\u0000${line.time_nano}\u0000${line.stream}\u0000${line.text}`;
}

const UNITS: Record<string, bigint> = { s: 1_000n, m: 60_000n, h: 3_600_000n, d: 86_400_000n };

/**
 * Nanoseconds since the epoch (decimal) for `--since`/`--until`: a duration before `nowMs` (`90s`, `30m`, `2h`,
 * `7d`) or an RFC 3339 time. Throws a usage error.
 */
export function parseWhen(option: string, text: string, nowMs: number): string {
  const trimmed = text.trim();
  const duration = trimmed.match(/^(\d{1,9})([smhd])$/);
  if (duration !== null) {
    return ((BigInt(nowMs) - BigInt(duration[1]) * UNITS[duration[2]]) * 1_000_000n).toString();
  }
  if (/^\d{4}-\d{2}-\d{2}T/.test(trimmed)) {
    const ms = Date.parse(trimmed);
    if (Number.isFinite(ms)) return (BigInt(ms) * 1_000_000n).toString();
  }
  throw new OperatorError(
    "invalid_argument",
    `Invalid value "${text}" for "${option}": expected a duration such as "30m" or "2h", or an RFC 3339 time`,
    { option },
  );
}

/**
 * Reads a TailLogs NDJSON stream frame by frame. A frame this reader does not know ends the stream with an error,
 * since variants are opt-in (docs/rpc.md, rule 5) and this reader opted into none but heartbeats.
 */
export async function* readFrames(stream: ReadableStream<Uint8Array>): AsyncGenerator<TailFrame> {
  let pending = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    pending += chunk;
    let newline: number;
    while ((newline = pending.indexOf("\n")) >= 0) {
      const raw = pending.slice(0, newline).trim();
      pending = pending.slice(newline + 1);
      if (raw === "") continue;
      let value: unknown;
      try {
        value = JSON.parse(raw);
      } catch {
        throw new OperatorError("internal", `Cannot read a TailLogs frame: not JSON: "${raw.slice(0, 80)}"`);
      }
      const frame = readTailFrame(value);
      if (frame === undefined) {
        throw new OperatorError(
          "internal",
          `Cannot read a TailLogs frame: unknown variant "${raw.slice(0, 80)}"`,
        );
      }
      yield frame;
    }
  }
}
