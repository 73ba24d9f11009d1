/**
 * Durable file replacement: write a temp file beside the target, fsync it, rename it over the target, fsync the
 * directory. A crash leaves the old file or the new one, never a torn one.
 *
 * @module
 */

import { dirname, join } from "node:path";

/** Replaces `path` with `data` atomically; the file gets `mode` (default 0o644). */
export async function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o644): Promise<void> {
  const dir = dirname(path);
  const temp = join(dir, `.${crypto.randomUUID()}.tmp`);
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const file = await Deno.open(temp, { write: true, createNew: true, mode });
  try {
    let written = 0;
    while (written < bytes.length) written += await file.write(bytes.subarray(written));
    await file.sync();
  } catch (error) {
    file.close();
    await Deno.remove(temp).catch(() => {});
    throw error;
  } finally {
    try {
      file.close();
    } catch {
      // Already closed on the error path.
    }
  }
  // The umask may have narrowed `mode` at creation.
  await Deno.chmod(temp, mode);
  try {
    await Deno.rename(temp, path);
  } catch (error) {
    await Deno.remove(temp).catch(() => {});
    throw error;
  }
  await syncDir(dir);
}

async function syncDir(dir: string): Promise<void> {
  let handle: Deno.FsFile | undefined;
  try {
    handle = await Deno.open(dir, { read: true });
    await handle.sync();
  } catch {
    // Some filesystems refuse fsync on a directory; the rename is still atomic.
  } finally {
    handle?.close();
  }
}
