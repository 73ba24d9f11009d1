/**
 * The frame scanner of Docker's `local` log file: `[u32 BE length][LogEntry][u32 BE length]`, repeated.
 *
 * Resync rule. A frame at position p is valid when its length L is 1..`maxFrameBytes`, the trailer after the body
 * equals L, and the body decodes as a `LogEntry` (see {@link decodeLogEntry}). When the bytes at p are not a valid
 * frame, the scanner advances one byte and tries again; every byte skipped that way is counted as corrupt, so the
 * count is exact. A frame that could still be valid but runs past the end of the bytes read is `incomplete`:
 * when more bytes may come (a live file, or a chunk that is not the file's end) the scanner stops there and the
 * caller resumes at that position later; only when the bytes are final (a rotated file, fully read) is it skipped
 * as corrupt.
 *
 * @module
 */

import { decodeLogEntry, type LogEntry } from "./log_entry.ts";

/** Docker's own cap on an encoded message (moby `maxMsgLen`, 1e6), rounded up to 1 MiB. */
export const MAX_FRAME_BYTES = 1024 * 1024;

/** A decoded entry with where its frame starts, relative to the scanned bytes. */
export interface ScannedEntry extends LogEntry {
  /** Offset of the frame's first byte within the scanned bytes. */
  at: number;
}

/** What one scan found. */
export interface ScanResult {
  /** Valid entries, in file order. */
  entries: ScannedEntry[];
  /** Bytes skipped because no valid frame starts there. */
  corruptBytes: number;
  /** Where the next scan must start: the end of the bytes, or the start of an incomplete frame. */
  next: number;
}

/** Options of {@link scanFrames}. */
export interface ScanOptions {
  /** Whether no more bytes will follow (a rotated file read to its end). */
  final: boolean;
  /** The largest body accepted; default {@link MAX_FRAME_BYTES}. */
  maxFrameBytes?: number;
}

const INCOMPLETE = 0;
const INVALID = -1;

/** Scans `bytes` from its start for frames; see the module doc for the resync rule. */
export function scanFrames(bytes: Uint8Array, options: ScanOptions): ScanResult {
  const max = options.maxFrameBytes ?? MAX_FRAME_BYTES;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const entries: ScannedEntry[] = [];
  let corruptBytes = 0;
  let pos = 0;
  while (pos < bytes.length) {
    const end = frameEnd(bytes, view, pos, max);
    if (end === INCOMPLETE && !options.final) break;
    if (end > 0) {
      const entry = decodeLogEntry(bytes.subarray(pos + 4, end - 4));
      if (entry !== undefined) {
        entries.push({ ...entry, at: pos });
        pos = end;
        continue;
      }
    }
    corruptBytes++;
    pos++;
  }
  return { entries, corruptBytes, next: pos };
}

/** The end of a well-framed record at `pos` (before decoding), `INCOMPLETE`, or `INVALID`. */
function frameEnd(bytes: Uint8Array, view: DataView, pos: number, max: number): number {
  if (pos + 4 > bytes.length) return INCOMPLETE;
  const length = view.getUint32(pos);
  if (length === 0 || length > max) return INVALID;
  const end = pos + 8 + length;
  if (end > bytes.length) return INCOMPLETE;
  return view.getUint32(end - 4) === length ? end : INVALID;
}
