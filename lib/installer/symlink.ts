// Durable replacement of symlinks: make the new link beside the target, rename it over it, fsync the directory.
// A crash leaves the old link or the new one, never none.
import { dirname, join } from "node:path";
import { syncDir } from "../util/mod.ts";
import { execBounded, tail } from "./exec.ts";

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
