// Durable replacement of files and symlinks: write beside the target, fsync, rename over it, fsync the directory.
// A crash leaves the old entry or the new one, never a torn one.
import { dirname, join } from "node:path";
import { execBounded, tail } from "./exec.ts";

/** Replaces `path` with `data`; the file gets `mode`. */
export async function writeFileAtomic(path: string, data: string, mode = 0o644): Promise<void> {
  const temp = join(dirname(path), `.${crypto.randomUUID()}.tmp`);
  const bytes = new TextEncoder().encode(data);
  const file = await Deno.open(temp, { write: true, createNew: true, mode });
  try {
    let written = 0;
    while (written < bytes.length) written += await file.write(bytes.subarray(written));
    await file.sync();
  } finally {
    file.close();
  }
  try {
    await Deno.chmod(temp, mode);
    await Deno.rename(temp, path);
  } catch (error) {
    await Deno.remove(temp).catch(() => {});
    throw error;
  }
  await syncDir(dirname(path));
}

/**
 * Points the symlink `path` at `target` by renaming a fresh link over it. The fresh link is made by `ln`: Deno
 * allows `Deno.symlink` only under unscoped read and write grants, and the install set's writes are scoped.
 */
export async function replaceSymlink(path: string, target: string): Promise<void> {
  const temp = join(dirname(path), `.${crypto.randomUUID()}.link`);
  const made = await execBounded("ln", ["-s", "--", target, temp], { timeoutMs: 30_000 });
  if (made.code !== 0) throw new Error(`Cannot create the symlink "${temp}": ${tail(made.stderr)}`);
  // A symlink cannot be fsynced itself; the directory fsync makes both its creation and the rename durable.
  await syncDir(dirname(path));
  try {
    await Deno.rename(temp, path);
  } catch (error) {
    await Deno.remove(temp).catch(() => {});
    throw error;
  }
  await syncDir(dirname(path));
}

/** fsyncs a directory, so renames and creations inside it survive a crash. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await Deno.open(dir, { read: true });
  try {
    await handle.sync();
  } finally {
    handle.close();
  }
}

/** The target of a symlink, or undefined when `path` is absent or not a symlink. */
export async function readLinkOrUndefined(path: string): Promise<string | undefined> {
  try {
    return await Deno.readLink(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.InvalidData) return undefined;
    // EINVAL: not a symlink.
    if (error instanceof Error && /os error 22/.test(error.message)) return undefined;
    throw error;
  }
}
