// How long `ployz` takes to start and finish a command that does nothing remote, against an empty `deno run`
// (the floor every launch pays): `ployz version` (the command tree only) and `ployz config` (the Compose parser),
// bundled (tools/build/bundle.ts, as a Deploy and the e2e tests run it) and from source. Every command a Deploy or
// a test runs pays this before its first RPC.
//
// `deno bench -A tools/bench/cli_start_bench.ts` (bundles the CLI into dist/bundle/ first, as `deno task bundle`).
import { join } from "node:path";
import { bundleCli } from "../build/bundle.ts";

const ROOT = join(import.meta.dirname!, "..", "..");
const PLOYZ = join(ROOT, "bin", "ployz");
const dir = await Deno.makeTempDir({ prefix: "ployz-cli-start-" });
await Deno.writeTextFile(
  join(dir, "compose.yaml"),
  'services:\n  web:\n    image: nginx:1.27\n    ports: ["8080:80"]\n    deploy:\n      replicas: 2\n',
);
await Deno.writeTextFile(join(dir, "empty.js"), "");
await bundleCli(ROOT);
globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));

async function run(command: string, args: string[], env: Record<string, string> = {}): Promise<void> {
  const result = await new Deno.Command(command, { args, env, cwd: dir, stdout: "null", stderr: "piped" })
    .output();
  if (!result.success) {
    throw new Error(`${command} ${args.join(" ")}: ${new TextDecoder().decode(result.stderr)}`);
  }
}

const cases: [string, () => Promise<void>][] = [
  ["empty deno run", () => run(Deno.execPath(), ["run", "--quiet", "--no-prompt", "empty.js"])],
  ["ployz version, bundled", () => run(PLOYZ, ["version"])],
  ["ployz config, bundled", () => run(PLOYZ, ["config"])],
  ["ployz version, from source", () => run(PLOYZ, ["version"], { PLOYZ_LAUNCHER_BUNDLE: "0" })],
  ["ployz config, from source", () => run(PLOYZ, ["config"], { PLOYZ_LAUNCHER_BUNDLE: "0" })],
];
for (const [index, [name, fn]] of cases.entries()) {
  // An async function: deno bench awaits only those.
  Deno.bench({
    name,
    group: "ployz start",
    baseline: index === 0,
    n: 20,
    warmup: 2,
    fn: async () => await fn(),
  });
}
