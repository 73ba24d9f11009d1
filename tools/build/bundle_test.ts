// The daemon bundle keeps each process to what it runs, as the source does (tests/module_graph_test.ts): the chunks
// `ployzd serve` loads hold its npm packages inline and nothing of the Observe Store or the lab; those of
// `ployzd dns` hold no Docker, store, daemon or npm package; those of `ployzd observe` hold hono inline and nothing of
// the daemon.
import { deepEqual, equal, ok } from "node:assert/strict";
import { join } from "node:path";
import { DAEMON_BUNDLE } from "../../lib/permissions/mod.ts";
import { bundleCli, bundleDaemon, CLI_BUNDLE } from "./bundle.ts";

const ROOT = join(import.meta.dirname!, "..", "..");

interface Loaded {
  /** Repository files and npm package files bundled into the chunks, from the bundler's path comments. */
  sources: string[];
  /** Bare specifiers the chunks still import (npm packages and Node built-ins) statically. */
  imports: string[];
  /** The chunks, entry first. */
  chunks: string[];
  /** Their text, joined. */
  text: string;
}

// What running `<subcommand>` loads: the entry, the subcommand's chunk, and every chunk they import statically.
async function loadedBy(dir: string, subcommand: string, entry = "ployzd.js"): Promise<Loaded> {
  const names = (await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name);
  const chunk = names.find((n) => n.startsWith(`${subcommand}-`) && n.endsWith(".js"));
  ok(chunk, `no chunk for ${subcommand} among ${names.join(" ")}`);
  const seen = new Set<string>();
  const pending = [entry, chunk];
  const sources = new Set<string>();
  const imports = new Set<string>();
  let all = "";
  while (pending.length > 0) {
    const name = pending.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const text = await Deno.readTextFile(join(dir, name));
    all += text;
    for (const [, path] of text.matchAll(/^\/\/ (\S+\.[cm]?[jt]s)$/gm)) sources.add(path);
    // One statement a line, or (minified) several on one line.
    for (const [, spec] of text.matchAll(/(?:^|[;}])\s*(?:import|export)\b[^;"]*?\bfrom\s*"([^"]+)"/gm)) {
      if (spec.startsWith("./")) pending.push(spec.slice(2));
      else imports.add(spec);
    }
  }
  return { sources: [...sources].sort(), imports: [...imports].sort(), chunks: [...seen], text: all };
}

Deno.test("the daemon bundle gives serve and observe their npm packages inline and dns and observe nothing of serve", async () => {
  const out = await Deno.makeTempDir({ prefix: "ployzd-bundle-" });
  const plainOut = await Deno.makeTempDir({ prefix: "ployzd-bundle-plain-" });
  try {
    const entry = await bundleDaemon(ROOT, out);
    const dir = join(entry, "..");
    ok(entry.endsWith(DAEMON_BUNDLE), entry);
    // The installed bundle is minified, without the path comments that say what a chunk holds: its contents are
    // read from the same bundle built unminified, and the two must split alike (same chunks loaded per subcommand,
    // same imports).
    const plainDir = join(await bundleDaemon(ROOT, plainOut, false), "..");
    const plainOf: Record<string, Loaded> = {};
    for (const subcommand of ["serve", "dns", "observe"]) {
      const minified = await loadedBy(dir, subcommand);
      const plain = plainOf[subcommand] = await loadedBy(plainDir, subcommand);
      deepEqual(minified.sources, [], `${subcommand}: the installed bundle is minified`);
      deepEqual(minified.imports, plain.imports, `${subcommand} imports the same minified`);
      equal(minified.chunks.length, plain.chunks.length, `${subcommand} loads as many chunks minified`);
      ok(
        minified.text.length < plain.text.length * 0.7,
        `${subcommand}: ${minified.text.length} bytes minified`,
      );
    }
    // Function names are kept (stack traces name them).
    ok(
      (await loadedBy(dir, "serve")).text.includes('"startDaemon"'),
      "serve's chunks keep startDaemon's name",
    );

    const serve = plainOf.serve;
    ok(serve.sources.includes("lib/daemon/daemon.ts"), "the serve chunks hold the daemon");
    for (const pkg of ["zod", "hono", "@noble/curves"]) {
      ok(serve.sources.some((s) => s.includes(`/node_modules/${pkg}/`)), `${pkg} is bundled into serve`);
    }
    // Nothing left for the npm resolver at start: only Node built-ins are imported by name.
    deepEqual(serve.imports.filter((s) => !s.startsWith("node:")), []);
    for (const area of ["lib/observe/", "lib/lab/", "lib/operator/"]) {
      ok(!serve.sources.some((s) => s.startsWith(area)), `serve loads nothing of ${area}`);
    }

    const dns = plainOf.dns;
    ok(dns.sources.includes("lib/dns/server.ts"), "the dns chunks hold the DNS server");
    for (const area of ["lib/daemon/", "lib/store/", "lib/deploy/", "lib/rpc/"]) {
      ok(!dns.sources.some((s) => s.startsWith(area)), `dns loads nothing of ${area}`);
    }
    ok(!dns.sources.some((s) => s.includes("node_modules/")), "dns loads no npm package");
    ok(!dns.imports.includes("node:sqlite"), dns.imports.join(" "));

    const observe = plainOf.observe;
    ok(observe.sources.includes("lib/observe/ingester.ts"), "the observe chunks hold the Observe Store");
    ok(observe.sources.some((s) => s.includes("/node_modules/hono/")), "hono is bundled into observe");
    deepEqual(observe.imports.filter((s) => !s.startsWith("node:")), []);
    for (const area of ["lib/daemon/", "lib/store/", "lib/deploy/", "lib/rpc/"]) {
      ok(!observe.sources.some((s) => s.startsWith(area)), `observe loads nothing of ${area}`);
    }
    ok(!observe.sources.some((s) => s.includes("/node_modules/zod/")), "observe loads no zod");
  } finally {
    await Deno.remove(out, { recursive: true });
    await Deno.remove(plainOut, { recursive: true });
  }
});

Deno.test("the CLI bundle loads each command's code when it runs, and yaml as an ES module", async () => {
  const out = await Deno.makeTempDir({ prefix: "ployz-bundle-" });
  try {
    const entry = await bundleCli(ROOT, out);
    ok(entry.endsWith(CLI_BUNDLE), entry);
    const dir = join(entry, "..");
    const text = await Deno.readTextFile(entry);
    ok(!/^\/\/ (lib\/deploy|lib\/rpc|node_modules)\//m.test(text), "the entry holds no command's code");

    const config = await loadedBy(dir, "config", "ployz.js");
    ok(config.sources.includes("lib/deploy/compose/load.ts"), "the config chunks hold the Compose loader");
    // yaml's `node` export is CommonJS, which would start Node's module loader: its ES module build is inline.
    ok(config.sources.some((s) => s.includes("/node_modules/yaml/browser/")), config.sources.join(" "));
    deepEqual(config.imports.filter((s) => !s.startsWith("node:")), []);
    for (const name of await Array.fromAsync(Deno.readDir(dir))) {
      const chunk = await Deno.readTextFile(join(dir, name.name));
      ok(!chunk.includes("createRequire"), `${name.name} requires no CommonJS module`);
    }
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});
