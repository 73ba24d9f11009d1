// What was at a path before the installer first took it over (a foreign `/usr/local/bin/ployzd`, a hand-written
// unit), recorded once in `<dataDir>/install/found.json` with a copy of any file, so removal can give it back.
import { join } from "node:path";
import { writeFileAtomic } from "../util/mod.ts";
import { readLinkOrUndefined } from "./symlink.ts";
import { type InstallPaths, installStateDir } from "./paths.ts";

/** One found entry. */
export interface FoundEntry {
  /** What was there. */
  kind: "absent" | "symlink" | "file";
  /** A symlink's target. */
  target?: string;
  /** Where a copy of a found file was saved. */
  "saved_as"?: string;
  /** When it was first found. */
  "found_at": string;
}

function foundPath(paths: InstallPaths): string {
  return join(installStateDir(paths), "found.json");
}

/** Every recorded entry, by path. */
export async function readFound(paths: InstallPaths): Promise<Record<string, FoundEntry>> {
  try {
    return JSON.parse(await Deno.readTextFile(foundPath(paths))) as Record<string, FoundEntry>;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return {};
    throw error;
  }
}

/**
 * Records what is at `path` before the installer writes it, unless `isOurs` says it is already the installer's
 * or an entry exists. Only the first finding counts: later installs find their own files.
 */
export async function recordFound(
  paths: InstallPaths,
  path: string,
  isOurs: (info: Deno.FileInfo, linkTarget: string | undefined) => Promise<boolean>,
): Promise<void> {
  const found = await readFound(paths);
  if (found[path] !== undefined) return;
  const info = await Deno.lstat(path).catch(() => undefined);
  const now = new Date().toISOString();
  let entry: FoundEntry;
  if (info === undefined) entry = { kind: "absent", "found_at": now };
  else {
    const target = info.isSymlink ? await readLinkOrUndefined(path) : undefined;
    if (await isOurs(info, target)) return;
    if (info.isSymlink) entry = { kind: "symlink", target, "found_at": now };
    else {
      const dir = join(installStateDir(paths), "found");
      await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
      const savedAs = join(dir, path.replaceAll("/", "_"));
      await Deno.copyFile(path, savedAs);
      entry = { kind: "file", "saved_as": savedAs, "found_at": now };
    }
  }
  await Deno.mkdir(installStateDir(paths), { recursive: true, mode: 0o700 });
  await writeFileAtomic(foundPath(paths), JSON.stringify({ ...found, [path]: entry }, null, 2) + "\n", {
    mode: 0o600,
  });
}
