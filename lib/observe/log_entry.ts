/**
 * Docker's `LogEntry` protobuf message (moby `api/types/plugins/logdriver/entry.proto`), which the `local` log
 * driver writes between a 4-byte big-endian length and the same length again. Decoded by hand: the message has
 * five fields, and protobufjs would add about 14 MB of resident memory to the always-running Observe Store. The
 * tests check this decoder against protobufjs's encoding (`test_support.ts`).
 *
 * @module
 */

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

/**
 * Decodes one `LogEntry` body. Returns `undefined` when the bytes are not a plausible entry: protobuf cannot
 * decode them, or the source is neither `stdout` nor `stderr` (the only sources a container's output has), which
 * keeps a resync from accepting garbage that happens to decode.
 */
export function decodeLogEntry(body: Uint8Array): LogEntry | undefined {
  const fields = readFields(body);
  if (fields === undefined) return undefined;
  let source: string | undefined;
  let timeNano = 0n;
  let line: Uint8Array = new Uint8Array(0);
  let partial = false;
  let last = false;
  for (const f of fields) {
    if (f.number === 1 && f.bytes) source = utf8.decode(f.bytes);
    else if (f.number === 2 && f.varint !== undefined) timeNano = BigInt.asIntN(64, f.varint);
    else if (f.number === 3 && f.bytes) line = f.bytes.slice();
    else if (f.number === 4 && f.varint !== undefined) partial = f.varint !== 0n;
    else if (f.number === 5 && f.bytes) {
      const metadata = readFields(f.bytes);
      if (metadata === undefined) return undefined;
      last = metadata.some((m) => m.number === 1 && m.varint !== undefined && m.varint !== 0n);
    }
  }
  if (source !== "stdout" && source !== "stderr") return undefined;
  // A split line's last fragment carries metadata `last`; only earlier fragments lack an ending.
  return { stream: source, timeNano, line, partial: partial && !last };
}

const utf8 = new TextDecoder();

interface WireField {
  number: number;
  /** Set for varint fields (wire type 0). */
  varint?: bigint;
  /** Set for length-delimited fields (wire type 2). */
  bytes?: Uint8Array;
}

// The fields of one protobuf message, or undefined when the bytes are not one (truncated, a group, a bad varint).
function readFields(body: Uint8Array): WireField[] | undefined {
  const fields: WireField[] = [];
  let at = 0;
  while (at < body.length) {
    const key = readVarint(body, at);
    if (key === undefined) return undefined;
    at = key.next;
    const number = Number(key.value >> 3n);
    if (number === 0) return undefined;
    switch (Number(key.value & 7n)) {
      case 0: {
        const value = readVarint(body, at);
        if (value === undefined) return undefined;
        at = value.next;
        fields.push({ number, varint: value.value });
        break;
      }
      case 1:
        at += 8;
        break;
      case 2: {
        const length = readVarint(body, at);
        if (length === undefined || length.value > BigInt(body.length - length.next)) return undefined;
        at = length.next + Number(length.value);
        fields.push({ number, bytes: body.subarray(length.next, at) });
        break;
      }
      case 5:
        at += 4;
        break;
      default:
        return undefined;
    }
  }
  return at === body.length ? fields : undefined;
}

function readVarint(bytes: Uint8Array, start: number): { value: bigint; next: number } | undefined {
  let value = 0n;
  for (let i = 0; i < 10 && start + i < bytes.length; i++) {
    const byte = bytes[start + i];
    value |= BigInt(byte & 0x7f) << BigInt(7 * i);
    if ((byte & 0x80) === 0) return { value: BigInt.asUintN(64, value), next: start + i + 1 };
  }
  return undefined;
}

/** One entry as tests and benchmarks write it (`encodeLogFrame` in `test_support.ts`). */
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
