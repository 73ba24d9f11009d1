// The operator CLI and the daemon bundled. `ployz` from source loads about 280 modules before a Deploy can start
// (each resolved, read and compiled on its own); the same code bundled is a few chunks plus its npm packages, which
// starts in about half the CPU. bin/ployz runs the bundle while no source file is newer than it, and the source
// otherwise, so an edit is never masked by an old bundle. The bundle sits two directories below the root, as every
// lib/<area>/ module does, so the paths they derive from their own location (`new URL("../../", import.meta.url)`)
// stay the root.
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { DAEMON_BUNDLE } from "../../lib/permissions/mod.ts";

/** Where bin/ployz looks for the bundle's entry, relative to the root of a checkout or a release tree. */
export const CLI_BUNDLE = join("dist", "bundle", "ployz.js");

// npm packages a bundle carries inside it: ES modules with no Node built-in to require. Each package resolved from
// node_modules at run time costs start time and resident memory of its own (the npm resolver). Every other package
// stays an import, loaded by deno from node_modules as from source: bundled, a CommonJS package's require of a
// Node built-in would go through Node's module loader.
// zod is imported as a namespace (`import * as z`, lint rule `ployz/zod-namespace`) so the bundler keeps only what
// is used: its `z` export kept all of it, ~40 locales and its JSON Schema code included. Serve's and the CLI's chunks
// lost 366 KB and 576 KB; on a 3-Machine lab 15 s after a 3-replica Deploy (`tools/bench/lab_footprint_bench.ts`,
// two runs, trees alternating) serve's idle RSS median 79.8 and 79.3 MB instead of 86.7 and 83.3 MB: 2 MB less
// anonymous memory, the rest fewer of the deno binary's pages resident.
const INLINED = new Set(["zod", "hono", "hono/", "@noble/curves/"]);

// Packages whose `node` export condition, which deno resolves, is a CommonJS build while they ship an ES module
// one: loading the CommonJS build starts Node's module loader (about 40 ms of every `ployz config` or Deploy). The
// bundle carries the ES module build inline instead, mapped to the file by a temporary import map.
const ESM_BUILDS: Record<string, string> = { yaml: "browser/index.js" };

/**
 * Bundles `cmd/ployz.ts` of `root` into `<out>/dist/bundle/` (`out` defaults to `root`) with code splitting: each
 * command stays its own chunk imported when it runs, as from source, so `ployz version` loads no Compose parser
 * and `ployz config` no Docker client. Returns the entry's path ({@linkcode CLI_BUNDLE}).
 */
export function bundleCli(root: string, out: string = root): Promise<string> {
  return bundleSplit(root, join(root, "cmd", "ployz.ts"), join(out, CLI_BUNDLE), "the ployz CLI");
}

/**
 * Bundles `cmd/ployzd.ts` of `root` into `<out>/dist/ployzd/` (`out` defaults to `root`) with code splitting: each
 * subcommand stays its own chunk imported when it runs, so `ployzd dns` never loads serve's code. Returns the
 * entry's path ({@linkcode DAEMON_BUNDLE}); `lib/permissions`' `daemonEntry` decides who runs it.
 *
 * `minify` (the default; `false` keeps each module's path comment, for reading what a chunk holds): shorter local
 * names and no comments, with function and class names kept, so stack traces still name functions. The daemon
 * loads the bundle's source text into the V8 heap, where one non-Latin-1 character (a "—" in a comment) stores a
 * whole chunk as two-byte characters: minified, serve's chunk is 1.0 instead of 1.7 MB, 0.6 MB less V8 heap and
 * 1.2 MB less RSS at start. On a 3-Machine lab 15 s after a 3-replica Deploy (`tools/bench/lab_footprint_bench.ts`,
 * two runs of three serves each way, alternating trees): idle RSS median 85.6 MB (78.5-89.5, mean 84.9) instead of
 * 86.3 MB (84.4-89.9, mean 86.6), lower in both runs (86.3 vs 87.5, 83.7 vs 85.0); observe 50.8 vs 52.6 MB in one.
 */
export function bundleDaemon(root: string, out: string = root, minify = true): Promise<string> {
  return bundleSplit(
    root,
    join(root, "cmd", "ployzd.ts"),
    join(out, DAEMON_BUNDLE),
    "ployzd",
    minify ? ["--minify", "--keep-names"] : [],
  );
}

// Bundles `entry` into the directory of `target` (named after `entry`), offline, in a temporary directory renamed
// into place, so a launch never sees half a bundle.
async function bundleSplit(
  root: string,
  entry: string,
  target: string,
  what: string,
  extra: readonly string[] = [],
): Promise<string> {
  const dir = dirname(target);
  const imports = JSON.parse(await Deno.readTextFile(join(root, "deno.json"))).imports as Record<
    string,
    string
  >;
  const external = Object.keys(imports).filter((name) => !INLINED.has(name) && !(name in ESM_BUILDS)).flatMap(
    (
      name,
    ) => ["--external", name.endsWith("/") ? `${name}*` : name],
  );
  await Deno.mkdir(dirname(dir), { recursive: true });
  const partial = `${dir}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  const old = `${dir}.${crypto.randomUUID().slice(0, 8)}.old`;
  const importMap = `${partial}.imports.json`;
  for (const [name, file] of Object.entries(ESM_BUILDS)) {
    imports[name] = pathToFileURL(join(await Deno.realPath(join(root, "node_modules", name)), file)).href;
  }
  await Deno.writeTextFile(importMap, JSON.stringify({ imports }));
  try {
    const result = await new Deno.Command(Deno.execPath(), {
      args: [
        "bundle",
        "--quiet",
        "--frozen",
        "--config",
        join(root, "deno.json"),
        "--platform",
        "deno",
        "--import-map",
        importMap,
        "--code-splitting",
        ...extra,
        ...external,
        "--outdir",
        partial,
        entry,
      ],
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    if (!result.success) throw new Error(`Cannot bundle ${what}: deno bundle exited ${result.code}`);
    await Deno.rename(dir, old).catch((error) => {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    });
    await Deno.rename(partial, dir);
  } finally {
    await Deno.remove(importMap).catch(() => {});
    await Deno.remove(partial, { recursive: true }).catch(() => {});
    await Deno.remove(old, { recursive: true }).catch(() => {});
  }
  return target;
}

if (import.meta.main) {
  const root = join(import.meta.dirname!, "..", "..");
  console.log(`bundle: ${await bundleCli(root)}`);
  console.log(`bundle: ${await bundleDaemon(root)}`);
}
