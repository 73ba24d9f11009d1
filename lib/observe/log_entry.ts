/**
 * Docker's `LogEntry` protobuf message (moby `api/types/plugins/logdriver/entry.proto`), which the `local` log
 * driver writes between a 4-byte big-endian length and the same length again. Decoded with protobufjs from a
 * `.proto`-free type definition.
 *
 * @module
 */

import protobuf from "protobufjs";

/** Which output stream a line came from. */
export type LogStream = "stdout" | "stderr";

/** One decoded log entry. */
export interface LogEntry {
  /** `stdout` or `stderr`. */
  stream: LogStream;
  /** When Docker received the line, in nanoseconds since the Unix epoch. */
  timeNano: bigint;
  /** The line's bytes, without the newline Docker strips. */
  line: Uint8Array;
  /** Whether this is a fragment of a longer line that Docker split (no newline ends it). */
  partial: boolean;
}

const { Field, Root, Type } = protobuf;

const metadataType = new Type("PartialLogEntryMetadata")
  .add(new Field("last", 1, "bool"))
  .add(new Field("id", 2, "string"))
  .add(new Field("ordinal", 3, "int32"));

const entryType = new Type("LogEntry")
  .add(new Field("source", 1, "string"))
  .add(new Field("timeNano", 2, "int64"))
  .add(new Field("line", 3, "bytes"))
  .add(new Field("partial", 4, "bool"))
  .add(new Field("partialLogMetadata", 5, "PartialLogEntryMetadata"));

new Root().add(metadataType).add(entryType);

interface Long {
  low: number;
  high: number;
}

interface RawEntry {
  source: string;
  timeNano: Long | number;
  line: Uint8Array;
  partial: boolean;
  partialLogMetadata?: { last: boolean } | null;
}

function toBigInt(value: Long | number): bigint {
  if (typeof value === "number") return BigInt(value);
  return (BigInt(value.high) << 32n) | BigInt(value.low >>> 0);
}

/**
 * Decodes one `LogEntry` body. Returns `undefined` when the bytes are not a plausible entry: protobuf cannot
 * decode them, or the source is neither `stdout` nor `stderr` (the only sources a container's output has), which
 * keeps a resync from accepting garbage that happens to decode.
 */
export function decodeLogEntry(body: Uint8Array): LogEntry | undefined {
  let raw: RawEntry;
  try {
    raw = entryType.decode(body) as unknown as RawEntry;
  } catch {
    return undefined;
  }
  if (raw.source !== "stdout" && raw.source !== "stderr") return undefined;
  // A split line's last fragment carries metadata `last`; only earlier fragments lack an ending.
  const partial = raw.partial === true && raw.partialLogMetadata?.last !== true;
  return { stream: raw.source, timeNano: toBigInt(raw.timeNano), line: raw.line, partial };
}

/** What {@link encodeLogEntry} writes; tests and benchmarks generate log files with it. */
export interface LogEntryInput {
  /** The source stream. */
  stream: LogStream;
  /** Nanoseconds since the Unix epoch. */
  timeNano: bigint;
  /** The line's text or bytes. */
  line: string | Uint8Array;
  /** Marks a fragment of a split line. */
  partial?: { id: string; ordinal: number; last: boolean };
}

const encoder = new TextEncoder();

/** Encodes one entry as a whole `local` driver frame: length, `LogEntry`, length. */
export function encodeLogFrame(entry: LogEntryInput): Uint8Array {
  const message: Record<string, unknown> = {
    source: entry.stream,
    timeNano: {
      low: Number(BigInt.asIntN(32, entry.timeNano)),
      high: Number(BigInt.asIntN(32, entry.timeNano >> 32n)),
      unsigned: false,
    },
    line: typeof entry.line === "string" ? encoder.encode(entry.line) : entry.line,
  };
  if (entry.partial) {
    message.partial = true;
    message.partialLogMetadata = entry.partial;
  }
  const body = entryType.encode(message).finish();
  const frame = new Uint8Array(body.length + 8);
  const view = new DataView(frame.buffer);
  view.setUint32(0, body.length);
  frame.set(body, 4);
  view.setUint32(4 + body.length, body.length);
  return frame;
}
