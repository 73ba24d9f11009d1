/**
 * The observe.sock wire format: snake_case JSON, nanosecond times as decimal strings (they exceed 2^53).
 *
 * @module
 */

import { ObserveError } from "./errors.ts";
import { type LogHistoryQuery, type LogLine, type LogSelector, MAX_HISTORY_LIMIT } from "./log_query.ts";
import type { TailQuery } from "./tail.ts";
import type { FieldRule } from "./wire_reader.ts";

/** A time on the wire: nanoseconds since the epoch as a decimal string, or an RFC 3339 timestamp. */
const time: FieldRule = { kind: "string", min: 1, max: 64 };

const selector: Record<string, FieldRule> = {
  project: { kind: "string", min: 1, max: 256, optional: true },
  service: { kind: "string", min: 1, max: 256, optional: true },
  deployment: { kind: "string", min: 1, max: 256, optional: true },
  container: { kind: "string", min: 1, max: 128, optional: true },
  grep: { kind: "string", min: 0, max: 1024, optional: true },
};

/** Whose lines a wire request asks for. */
interface WireSelector {
  project?: string;
  service?: string;
  deployment?: string;
  container?: string;
  grep?: string;
}

/** `POST /observe/v1/log_history` request. */
export interface LogHistoryRequest extends WireSelector {
  since: string;
  until?: string;
  limit: number;
}

/** Reader rules of {@link LogHistoryRequest}. */
export const LOG_HISTORY_RULES: Record<string, FieldRule> = {
  ...selector,
  since: time,
  until: { ...time, optional: true },
  limit: { kind: "int", min: 1, max: MAX_HISTORY_LIMIT },
};

/** `POST /observe/v1/tail_logs` request. */
export interface TailLogsRequest extends WireSelector {
  since?: string;
  backlog?: number;
}

/** Reader rules of {@link TailLogsRequest}. */
export const TAIL_LOGS_RULES: Record<string, FieldRule> = {
  ...selector,
  since: { ...time, optional: true },
  backlog: { kind: "int", min: 0, max: MAX_HISTORY_LIMIT, optional: true },
};

/** One line on the wire. */
export interface WireLine {
  /** The Machine that ran the container. */
  "machine_id": string;
  /** Docker's container id. */
  "container_id": string;
  /** The container name. */
  "container_name": string;
  /** `ployz.project`. */
  project: string;
  /** `ployz.service`. */
  service: string;
  /** `ployz.deployment`. */
  deployment: string;
  /** `ployz.slot`. */
  slot: string;
  /** `stdout` or `stderr`. */
  stream: string;
  /** Nanoseconds since the epoch, as a decimal string. */
  "time_nano": string;
  /** The same time in RFC 3339 with nanoseconds, UTC. */
  time: string;
  /** The line without its newline. */
  text: string;
  /** A fragment of a longer line; the next fragment of the container continues it. */
  partial: boolean;
}

/** Parses a wire time; throws `invalid_argument`. */
export function parseTime(field: string, value: string): bigint {
  if (/^\d{1,20}$/.test(value)) return BigInt(value);
  const ms = Date.parse(value);
  if (!Number.isFinite(ms) || !/^\d{4}-\d{2}-\d{2}T/.test(value)) {
    throw new ObserveError(
      "invalid_argument",
      `Cannot read ${field} "${value}": expected nanoseconds since the epoch or an RFC 3339 time`,
    );
  }
  // Keep sub-millisecond digits Date.parse drops.
  const fraction = value.match(/\.(\d+)/)?.[1] ?? "";
  const subMs = fraction.length > 3 ? BigInt(fraction.slice(3, 9).padEnd(6, "0")) : 0n;
  return BigInt(ms) * 1_000_000n + subMs;
}

/** Whose lines a wire request asks for, and the text they must contain. */
function selectorFromWire(request: WireSelector): LogSelector & { grep?: string } {
  return {
    project: request.project,
    service: request.service,
    deployment: request.deployment,
    container: request.container,
    grep: request.grep,
  };
}

/** The history query a wire request asks for. */
export function historyFromWire(request: LogHistoryRequest): LogHistoryQuery {
  return {
    ...selectorFromWire(request),
    since: parseTime("since", request.since),
    until: request.until === undefined ? undefined : parseTime("until", request.until),
    limit: request.limit,
  };
}

/** The tail query a wire request asks for. */
export function tailFromWire(request: TailLogsRequest): TailQuery {
  return {
    ...selectorFromWire(request),
    since: request.since === undefined ? undefined : parseTime("since", request.since),
    backlog: request.backlog,
  };
}

/** A stored line as the wire carries it. */
export function lineToWire(line: LogLine): WireLine {
  const ms = Number(line.timeNano / 1_000_000n);
  const nanos = (line.timeNano % 1_000_000_000n).toString().padStart(9, "0");
  return {
    "machine_id": line.machineId,
    "container_id": line.containerId,
    "container_name": line.containerName,
    project: line.project,
    service: line.service,
    deployment: line.deployment,
    slot: line.slot,
    stream: line.stream,
    "time_nano": line.timeNano.toString(),
    time: `${new Date(ms).toISOString().slice(0, 19)}.${nanos}Z`,
    text: line.text,
    partial: line.partial,
  };
}
