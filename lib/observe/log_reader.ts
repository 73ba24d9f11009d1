/**
 * Reads one container's `local` driver log files from a saved cursor and follows rotation.
 *
 * Docker writes `container.log`; at its size cap it renames `container.log.N-1` to `.N` … `container.log` to
 * `container.log.1` and starts a new `container.log`. A cursor names a file by its inode plus its first bytes
 * (an inode can be reused once the oldest file is deleted) and an offset in it. When the live file is no longer
 * the cursor's file, the reader finds the cursor's file among the rotated ones, finishes it from the offset, reads
 * every newer rotated file whole, then the live file from 0. When the cursor's file is gone (rotated past
 * `max-file` before it was read), every remaining file is newer than it, so all are read and the batch reports a
 * gap. Rotated files are final: a frame truncated at their end is corrupt. The live file is not: a truncated last
 * frame waits for the writer until the file holds its declared length or is rotated.
 *
 * @module
 */

import { join } from "node:path";
import { MAX_FRAME_BYTES, scanFrames, type ScannedEntry } from "./frames.ts";

/** Where reading stopped in one container's log files. */
export interface LogCursor {
  /** Inode of the file the offset belongs to. */
  ino: number;
  /** The file's first bytes (up to {@link HEAD_BYTES}), telling a reused inode from the original file. */
  head: Uint8Array;
  /** The next byte to read. */
  offset: number;
}

/** One batch of entries, with the cursor just past them; save both together. */
export interface LogBatch {
  /** Decoded entries, in file order. */
  entries: ScannedEntry[];
  /** Bytes skipped as corrupt in this batch. */
  corruptBytes: number;
  /** Set when the cursor's file was gone, so some output was never read. */
  gap: boolean;
  /** Where the next read starts. */
  cursor: LogCursor;
}

/** Options of {@link readLogBatches}. */
export interface ReadOptions {
  /** Bytes read per batch; at least the frame cap plus 8. Default 4 MiB. */
  chunkBytes?: number;
  /** The largest frame body accepted. Default {@link MAX_FRAME_BYTES}. */
  maxFrameBytes?: number;
  /** Stop after the batch in flight when aborted. */
  signal?: AbortSignal;
}

/** How many leading bytes identify a file. */
export const HEAD_BYTES = 32;

/** The name of the live log file inside `<dockerRoot>/containers/<id>/local-logs`. */
export const LIVE_LOG = "container.log";

interface Source {
  file: Deno.FsFile;
  ino: number;
  size: number;
  head: Uint8Array;
  final: boolean;
}

/**
 * Yields batches of new entries from `logDir` (a container's `local-logs`) starting at `cursor` (`undefined`: from
 * the oldest file). Yields nothing when there is nothing new; a batch with no entries may still move the cursor.
 */
export async function* readLogBatches(
  logDir: string,
  cursor: LogCursor | undefined,
  options: ReadOptions = {},
): AsyncGenerator<LogBatch> {
  const maxFrame = options.maxFrameBytes ?? MAX_FRAME_BYTES;
  const chunkBytes = Math.max(options.chunkBytes ?? 4 * 1024 * 1024, maxFrame + 8);
  const plan = await planSources(logDir, cursor);
  try {
    for (const [index, source] of plan.sources.entries()) {
      if (options.signal?.aborted) return;
      let offset = index === 0 ? plan.startOffset : 0;
      // A new file starts (or output was lost): the cursor moves to it even when it holds nothing yet.
      if (index > 0 || plan.gap) {
        yield {
          entries: [],
          corruptBytes: 0,
          gap: index === 0 && plan.gap,
          cursor: cursorAt(source, offset),
        };
      }
      while (offset < source.size) {
        if (options.signal?.aborted) return;
        const want = Math.min(chunkBytes, source.size - offset);
        // A fresh buffer per batch: decoded lines are views into it and outlive this iteration.
        const buffer = new Uint8Array(want);
        const got = await readAt(source.file, offset, buffer);
        const atEnd = offset + got >= source.size;
        const scan = scanFrames(buffer.subarray(0, got), {
          final: source.final && atEnd,
          maxFrameBytes: maxFrame,
        });
        if (scan.next === 0 && scan.entries.length === 0 && scan.corruptBytes === 0) break;
        for (const entry of scan.entries) entry.at += offset;
        offset += scan.next;
        yield {
          entries: scan.entries,
          corruptBytes: scan.corruptBytes,
          gap: false,
          cursor: cursorAt(source, offset),
        };
        if (got < want) break;
      }
    }
  } finally {
    for (const source of plan.sources) source.file.close();
  }
}

function cursorAt(source: Source, offset: number): LogCursor {
  return { ino: source.ino, head: source.head, offset };
}

interface Plan {
  sources: Source[];
  startOffset: number;
  gap: boolean;
}

async function planSources(logDir: string, cursor: LogCursor | undefined): Promise<Plan> {
  const live = await openSource(join(logDir, LIVE_LOG), false);
  if (live === undefined) return { sources: [], startOffset: 0, gap: false };
  if (cursor !== undefined && sameFile(live, cursor)) {
    // A live file shorter than the cursor was truncated in place: read it again from its start.
    const offset = live.size >= cursor.offset ? cursor.offset : 0;
    return { sources: [live], startOffset: offset, gap: false };
  }
  const rotated = await openRotated(logDir, live.ino);
  // Oldest first; the live file is newest.
  const ordered = [...rotated.reverse(), live];
  if (cursor !== undefined) {
    const found = ordered.findIndex((s) => sameFile(s, cursor));
    if (found >= 0) {
      ordered.slice(0, found).forEach((s) => s.file.close());
      const sources = ordered.slice(found);
      return { sources, startOffset: Math.min(cursor.offset, sources[0].size), gap: false };
    }
  }
  return { sources: ordered, startOffset: 0, gap: cursor !== undefined };
}

async function openRotated(logDir: string, liveIno: number): Promise<Source[]> {
  const found: Source[] = [];
  // Docker numbers rotated files from 1 without holes; stop at the first one missing.
  for (let n = 1; n <= 1000; n++) {
    const source = await openSource(join(logDir, `${LIVE_LOG}.${n}`), true);
    if (source === undefined) break;
    // Rotation between opening the live file and listing these: the file already open as live is this one.
    if (source.ino === liveIno) {
      source.file.close();
      continue;
    }
    found.push(source);
  }
  return found;
}

async function openSource(path: string, final: boolean): Promise<Source | undefined> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
  try {
    const stat = await file.stat();
    const head = new Uint8Array(Math.min(HEAD_BYTES, stat.size));
    const got = await readAt(file, 0, head);
    return { file, ino: stat.ino ?? 0, size: stat.size, head: head.subarray(0, got), final };
  } catch (error) {
    file.close();
    throw error;
  }
}

function sameFile(source: Source, cursor: LogCursor): boolean {
  if (source.ino !== cursor.ino) return false;
  const n = Math.min(source.head.length, cursor.head.length);
  for (let i = 0; i < n; i++) if (source.head[i] !== cursor.head[i]) return false;
  return true;
}

async function readAt(file: Deno.FsFile, offset: number, into: Uint8Array): Promise<number> {
  await file.seek(offset, Deno.SeekMode.Start);
  let got = 0;
  while (got < into.length) {
    const n = await file.read(into.subarray(got));
    if (n === null) break;
    got += n;
  }
  return got;
}
