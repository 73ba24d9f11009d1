/**
 * Durable file replacement: write a temp file beside the target, fsync it, rename it over the target, fsync the
 * directory. A crash leaves the old file or the new one, never a torn one.
 *
 * @module
 */

import { basename, dirname, join } from "node:path";

/** Options of {@linkcode writeFileAtomic}. */
export interface AtomicWriteOptions {
  /** The file's mode; the umask does not narrow it. Default 0o644. */
  mode?: number;
  /** Its owner, set before it takes its name (needs the privilege to chown); by default this process's. */
  owner?: { uid?: number; gid?: number };
}

/**
 * Replaces `path` with `data` atomically and durably: readers see the old content or the new, and after a crash
 * the file holds one of them in full.
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<void> {
  const mode = options.mode ?? 0o644;
  const dir = dirname(path);
  const temp = join(dir, `.${basename(path)}.${crypto.randomUUID()}.tmp`);
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  try {
    using file = await Deno.open(temp, { write: true, createNew: true, mode });
    let written = 0;
    while (written < bytes.length) written += await file.write(bytes.subarray(written));
    await file.sync();
    if (options.owner !== undefined) {
      await Deno.chown(temp, options.owner.uid ?? null, options.owner.gid ?? null);
    }
    // The umask may have narrowed `mode` at creation, and a chown clears set-id bits.
    await Deno.chmod(temp, mode);
    await Deno.rename(temp, path);
  } catch (error) {
    await Deno.remove(temp).catch(() => {});
    throw error;
  }
  await syncDir(dir, { tolerant: true });
}

/**
 * fsyncs a directory, so renames and creations inside it survive a crash. With `tolerant`, a filesystem that
 * refuses fsync on a directory is accepted: the rename is atomic regardless, only its durability is weaker.
 */
export async function syncDir(dir: string, options: { tolerant?: boolean } = {}): Promise<void> {
  try {
    using handle = await Deno.open(dir, { read: true });
    await handle.sync();
  } catch (error) {
    if (!options.tolerant) throw error;
  }
}

/**
 * The JSON value in `path`, or `undefined` when there is no such file; text that does not parse throws
 * `notJson(error)`, and any other failure to read it throws as it is.
 */
export async function readJsonIfPresent(path: string, notJson: (error: unknown) => Error): Promise<unknown> {
  const text = await readTextIfPresent(path);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw notJson(error);
  }
}

/** The text of `path`, or `undefined` when there is no such file; any other failure to read it throws. */
export async function readTextIfPresent(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}
