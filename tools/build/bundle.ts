// The operator CLI as one JavaScript file. `ployz` from source loads about 280 modules before a Deploy can start
// (each resolved, read and compiled on its own); the same code bundled is one file plus its npm packages, which
// starts in about half the CPU. bin/ployz runs the bundle while no source file is newer than it, and the source otherwise, so an edit is
// never masked by an old bundle. The bundle sits two directories below the root, as every lib/<area>/ module does,
// so the paths they derive from their own location (`new URL("../../", import.meta.url)`) stay the root.
import { join } from "node:path";

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

if (import.meta.main) {
  const root = join(import.meta.dirname!, "..", "..");
  console.log(`bundle: ${await bundleCli(root)}`);
}
