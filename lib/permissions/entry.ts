import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { PermissionSetName } from "./sets.ts";

/**
 * Where a checkout or a release tree keeps the bundled daemon (`tools/build/bundle.ts`): `ployzd.js` and its
 * chunks, two directories below the root as every `lib/<area>/` module is, so paths a module derives from its own
 * location (`new URL("../../", import.meta.url)`) stay the root.
 */
export const DAEMON_BUNDLE: string = join("dist", "ployzd", "ployzd.js");

/**
 * Subcommands that run from the bundle when a fresh one exists, measured at import (3 runs each): `serve`, whose
 * ~190 modules and three npm packages, each resolved and compiled on its own from source, hold ~10 MB more
 * resident memory than the same code as a few chunks (59 vs 69 MB); `observe`, with hono inline, 45.5 vs 49 MB.
 * `tools/bench/lab_footprint_bench.ts` gives the idle figures after a Deploy. `dns` gained 0.8 MB (40.5 vs
 * 41.3), the short-lived helpers little.
 */
const BUNDLED: ReadonlySet<PermissionSetName> = new Set(["serve", "observe"]);

// The tree this code runs from: from source and from the bundle alike, this module sits two directories below it.
const TREE = fileURLToPath(new URL("../../", import.meta.url));

/**
 * The file `deno run` starts `ployzd <subcommand>` from in the tree at `root` (default: the tree this code runs
 * from, so a bundled daemon starts its source-run children from the source): the bundle for a bundled subcommand
 * when it exists and no source it was made from is newer (an edit, a checkout, an added or removed file), else
 * `cmd/ployzd.ts`. The same rule as `bin/_launch.sh`'s `fresh_bundle`, so every launch path (the launcher, the
 * systemd units, the lab) runs the same code; an edit is never masked by an old bundle.
 */
export function daemonEntry(subcommand: PermissionSetName, root: string = TREE): string {
  const source = join(root, "cmd", "ployzd.ts");
  if (!BUNDLED.has(subcommand)) return source;
  const bundle = join(root, DAEMON_BUNDLE);
  let built: number;
  try {
    built = Deno.statSync(bundle).mtime?.getTime() ?? NaN;
  } catch {
    return source;
  }
  if (!Number.isFinite(built)) return source;
  for (const path of ["cmd", "lib", "deno.json", "deno.lock"]) {
    if (newerThan(join(root, path), built)) return source;
  }
  return bundle;
}

// Whether `path`, or anything below it, changed after `time` (a directory's own mtime moves when an entry is
// added or removed). What cannot be read counts as newer: the source then runs, never a bundle of unknown age.
function newerThan(path: string, time: number): boolean {
  try {
    const info = Deno.statSync(path);
    if ((info.mtime?.getTime() ?? Infinity) > time) return true;
    if (!info.isDirectory) return false;
    for (const entry of Deno.readDirSync(path)) {
      if (newerThan(join(path, entry.name), time)) return true;
    }
    return false;
  } catch (error) {
    return !(error instanceof Deno.errors.NotFound);
  }
}
