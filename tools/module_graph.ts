/**
 * What a process loads: the modules a program's entry reaches through static imports, plus those of the lazily
 * imported command modules it runs, read from `deno info --json`. `tests/module_graph_test.ts` asserts on it and
 * the footprint bench prints it.
 *
 * Run: `deno run -A tools/module_graph.ts cmd/ployzd.ts cmd/ployzd/dns.ts` prints the count per area and the npm
 * packages the `ployzd dns` process loads.
 *
 * @module
 */
import { relative, resolve } from "node:path";
import { fileURLToPath as fromFileUrl, pathToFileURL } from "node:url";

const ROOT = fromFileUrl(new URL("../", import.meta.url));

interface InfoDependency {
  code?: { specifier: string };
  isDynamic?: boolean;
}

interface InfoModule {
  specifier: string;
  kind?: string;
  npmPackage?: string;
  dependencies?: InfoDependency[];
}

/** The modules a process loads, as repository-relative paths, `npm:<name>` and `node:<name>` entries. */
export interface LoadedModules {
  /** Repository files, e.g. `lib/dns/server.ts`. */
  files: string[];
  /** npm packages by name, e.g. `dockerode`. */
  npm: string[];
  /** Node built-ins, e.g. `node:net`. */
  node: string[];
}

/**
 * The modules loaded by running `entry` when it goes on to import `lazy` (each a repository-relative path of a
 * module the program imports with `import()`): the static closure of the entry and of each lazy module. Other
 * dynamic imports are not followed, as they are not loaded.
 */
export async function loadedModules(entry: string, lazy: string[] = []): Promise<LoadedModules> {
  const seen = new Set<string>();
  const byUrl = new Map<string, InfoModule>();
  // Each root gets its own `deno info`: commands are imported through non-literal specifiers it cannot follow.
  for (const root of [entry, ...lazy]) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", "--config", `${ROOT}deno.json`, resolve(ROOT, root)],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) throw new Error(`deno info ${root} failed: ${new TextDecoder().decode(out.stderr)}`);
    const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
      modules: InfoModule[];
      redirects?: Record<string, string>;
    };
    for (const m of info.modules) byUrl.set(m.specifier, m);
    const redirects = info.redirects ?? {};
    const pending = [pathToFileURL(resolve(ROOT, root)).href];
    while (pending.length > 0) {
      const next = pending.pop()!;
      const url = redirects[next] ?? next;
      if (seen.has(url)) continue;
      seen.add(url);
      for (const dep of byUrl.get(url)?.dependencies ?? []) {
        if (dep.code && !dep.isDynamic) pending.push(dep.code.specifier);
      }
    }
  }
  const files = new Set<string>();
  const npm = new Set<string>();
  const node = new Set<string>();
  for (const url of seen) {
    const m = byUrl.get(url);
    if (m?.npmPackage) npm.add(m.npmPackage.replace(/@[^@]+$/, ""));
    else if (url.startsWith("node:")) node.add(url);
    else if (url.startsWith("file:")) files.add(relative(ROOT, fromFileUrl(url)));
  }
  return { files: [...files].sort(), npm: [...npm].sort(), node: [...node].sort() };
}

/** How many of `files` each area (`lib/<area>`, `cmd`, …) holds. */
export function countByArea(files: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const file of files) {
    const parts = file.split("/");
    const area = parts[0] === "lib" ? `lib/${parts[1]}` : parts[0];
    counts[area] = (counts[area] ?? 0) + 1;
  }
  return counts;
}

if (import.meta.main) {
  const [entry, ...lazy] = Deno.args;
  if (entry === undefined) {
    console.error("usage: deno run -A tools/module_graph.ts ENTRY [LAZY_MODULE...]");
    Deno.exit(2);
  }
  const loaded = await loadedModules(entry, lazy);
  console.log(JSON.stringify({ modules: loaded.files.length, ...countByArea(loaded.files) }));
  console.log(`npm: ${loaded.npm.join(" ") || "-"}`);
  console.log(`node: ${loaded.node.join(" ") || "-"}`);
}
