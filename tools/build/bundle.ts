// The operator CLI as one JavaScript file. `ployz` from source loads about 280 modules before a Deploy can start
// (each resolved, read and compiled on its own); the same code bundled is one file plus its npm packages, which
// starts in about half the CPU. bin/ployz runs the bundle while no source file is newer than it, and the source otherwise, so an edit is
// never masked by an old bundle. The bundle sits two directories below the root, as every lib/<area>/ module does,
// so the paths they derive from their own location (`new URL("../../", import.meta.url)`) stay the root.
import { dirname, join } from "node:path";
import { DAEMON_BUNDLE } from "../../lib/permissions/mod.ts";

/** Where bin/ployz looks for the bundle, relative to the root of a checkout or a release tree. */
export const CLI_BUNDLE = join("dist", "bundle", "ployz.js");

/**
 * Bundles `cmd/ployz.ts` of `root` into `<out>/dist/bundle/ployz.js` (`out` defaults to `root`), offline, through
 * a temporary file renamed into place, so a launcher never runs half a file. Returns the bundle's path.
 */
export async function bundleCli(root: string, out: string = root): Promise<string> {
  const target = join(out, CLI_BUNDLE);
  // npm packages stay imports, loaded by deno from node_modules as from source: bundled, a CommonJS package's
  // require of a Node built-in has no loader.
  const imports = JSON.parse(await Deno.readTextFile(join(root, "deno.json"))).imports as Record<
    string,
    string
  >;
  const external = Object.keys(imports).flatMap((
    name,
  ) => ["--external", name.endsWith("/") ? `${name}*` : name]);
  await Deno.mkdir(join(target, ".."), { recursive: true });
  const partial = `${target}.${crypto.randomUUID().slice(0, 8)}.tmp`;
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
        ...external,
        "-o",
        partial,
        join(root, "cmd", "ployz.ts"),
      ],
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    if (!result.success) throw new Error(`Cannot bundle the ployz CLI: deno bundle exited ${result.code}`);
    await Deno.rename(partial, target);
  } finally {
    await Deno.remove(partial).catch(() => {});
  }
  return target;
}

// npm packages the daemon bundle carries inside it: ES modules with no Node built-in to require. Each package
// resolved from node_modules at run time costs the process resident memory of its own (the npm resolver), so
// `ployzd serve` loads none from source. Every other package stays an import (see bundleCli).
const DAEMON_INLINED = new Set(["zod", "hono", "hono/", "@noble/curves/"]);

/**
 * Bundles `cmd/ployzd.ts` of `root` into `<out>/dist/ployzd/` (`out` defaults to `root`) with code splitting: each
 * subcommand stays its own chunk imported when it runs, so `ployzd dns` never loads serve's code. Built offline
 * in a temporary directory renamed into place, so a launch never sees half a bundle. Returns the entry's path
 * ({@linkcode DAEMON_BUNDLE}); `lib/permissions`' `daemonEntry` decides who runs it.
 */
export async function bundleDaemon(root: string, out: string = root): Promise<string> {
  const target = join(out, DAEMON_BUNDLE);
  const dir = dirname(target);
  const imports = JSON.parse(await Deno.readTextFile(join(root, "deno.json"))).imports as Record<
    string,
    string
  >;
  const external = Object.keys(imports).filter((name) => !DAEMON_INLINED.has(name)).flatMap((
    name,
  ) => ["--external", name.endsWith("/") ? `${name}*` : name]);
  await Deno.mkdir(dirname(dir), { recursive: true });
  const partial = `${dir}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  const old = `${dir}.${crypto.randomUUID().slice(0, 8)}.old`;
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
        "--code-splitting",
        ...external,
        "--outdir",
        partial,
        join(root, "cmd", "ployzd.ts"),
      ],
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    if (!result.success) throw new Error(`Cannot bundle ployzd: deno bundle exited ${result.code}`);
    await Deno.rename(dir, old).catch((error) => {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    });
    await Deno.rename(partial, dir);
  } finally {
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
