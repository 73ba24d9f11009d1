/**
 * Size, count and work limits of the loader, and the bounded file read every file it opens goes through. A
 * Compose file is operator input, but it may come from anywhere (a pasted example, a pull request); every
 * limit below is far above what a real Project needs and low enough that loading stays well under a second.
 *
 * @module
 */

import { realpathSync } from "node:fs";
import { CodedError } from "../../util/mod.ts";

/** Largest Compose file, in bytes: the largest real ones are tens of kilobytes. */
export const MAX_COMPOSE_BYTES = 128 * 1024;
/** Largest env_file, x-caddy file or `.env` read, in bytes. */
export const MAX_FILE_BYTES = 1024 * 1024;
/** Most Services in one Project. */
export const MAX_SERVICES = 1000;
/** Most replicas of one Service. */
export const MAX_REPLICAS = 1000;
/**
 * Longest `update_config.delay`: a Deploy is a bounded attempt, and a replacement never waits longer than
 * this for its turn.
 */
export const MAX_UPDATE_DELAY_MS = 3_600_000;
/**
 * Longest monitor period (`update_config.monitor`, `--monitor`): with the health gate's margin it stays well
 * under the hour a Machine lets a health gate wait.
 */
export const MAX_MONITOR_MS = 1_800_000;
/** Deepest `${VAR:-${…}}` nesting interpolation follows. */
export const MAX_INTERPOLATION_DEPTH = 32;
/** Mapping entries and list items the loader may visit in one file, merge keys and aliases expanded. */
export const MAX_NODE_VISITS = 200_000;
/** Unset variables named one by one in warnings; the rest are counted in one more warning. */
export const MAX_UNSET_WARNINGS = 20;
/** Problems spelled out in a {@linkcode ComposeError}'s message; the rest are counted. */
export const MAX_LISTED_ISSUES = 100;

/** Thrown by {@linkcode readBoundedFile} with a reason fit for an operator (never the file's content). */
export class FileLimitError extends CodedError {
  /** The reason, in sentence case. */
  constructor(message: string) {
    super("invalid_argument", message);
    this.name = "FileLimitError";
  }
}

const SPECIAL_ROOTS = ["/proc/", "/sys/", "/dev/"];

/**
 * Reads a regular file of at most `limit` bytes as UTF-8 text. Devices, FIFOs, directories and the kernel's
 * pseudo-files (`/proc/self/environ`, `/dev/zero`) are refused without reading them: their content is not the
 * operator's file, and some never end.
 */
export function readBoundedFile(path: string, limit: number = MAX_FILE_BYTES): string {
  const real = realpathSync(path);
  if (SPECIAL_ROOTS.some((root) => real.startsWith(root))) {
    throw new FileLimitError(`"${real}" is not a regular file`);
  }
  const file = Deno.openSync(real, { read: true });
  try {
    const info = file.statSync();
    if (!info.isFile) throw new FileLimitError("not a regular file");
    if (info.size > limit) {
      throw new FileLimitError(`it is ${info.size} bytes, more than the limit of ${limit}`);
    }
    // Read one byte past the size: a file that yields more than it said is not a plain file (or it grew).
    const buffer = new Uint8Array(info.size + 1);
    let filled = 0;
    while (filled < buffer.length) {
      const read = file.readSync(buffer.subarray(filled));
      if (read === null || read === 0) break;
      filled += read;
    }
    if (filled > info.size) throw new FileLimitError("it changed while being read");
    return new TextDecoder().decode(buffer.subarray(0, filled));
  } finally {
    file.close();
  }
}

/** The size of `text` in UTF-8 bytes when it is above `limit`, else undefined (short texts are not encoded). */
export function oversize(text: string, limit: number = MAX_FILE_BYTES): number | undefined {
  if (text.length * 3 <= limit) return undefined;
  const bytes = new TextEncoder().encode(text).length;
  return bytes > limit ? bytes : undefined;
}
