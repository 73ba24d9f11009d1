// The real programs through their launchers: help, version, usage mistakes, unbuilt subcommands, and the
// permission set each launcher picks.
import { deepEqual, equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import {
  DAEMON_BUNDLE,
  daemonEntry,
  permissionFlags,
  permissionSet,
  type PermissionSetName,
  permissionSetNames,
  runtimeFlags,
} from "../lib/permissions/mod.ts";
import { ROOT, run } from "./support/spawn.ts";

const PLOYZD = join(ROOT, "bin", "ployzd");
const PLOYZ = join(ROOT, "bin", "ployz");

Deno.test("ployzd version prints the release, --json is machine-readable, --version is version", async () => {
  const text = await run(PLOYZD, ["version"]);
  equal(text.code, 0, text.stderr);
  match(text.stdout, /^ployzd \d+\.\d+\.\d+ \(deno 2\.9\.\d+, /);
  const json = await run(PLOYZD, ["version", "--json"]);
  equal(
    JSON.parse(json.stdout).version,
    JSON.parse((await run(PLOYZ, ["version", "--json"])).stdout).version,
  );
  // `--version` alone is the version command, for both programs.
  for (const program of [PLOYZD, PLOYZ]) {
    const flag = await run(program, ["--version"]);
    equal(flag.code, 0, flag.stderr);
    equal(flag.stdout, (await run(program, ["version"])).stdout);
  }
});

Deno.test("every ployzd and ployz command answers --help", async () => {
  for (
    const [program, args] of [[PLOYZD, []], [PLOYZD, ["version"]], [PLOYZD, ["dial-stdio"]], [
      PLOYZ,
      [],
    ]] as const
  ) {
    const out = await run(program, [...args, "--help"]);
    equal(out.code, 0, out.stderr);
    match(out.stdout, /^Usage: ployzd?/);
  }
});

Deno.test("an unknown command or option prints one clear line plus usage and exits 2", async () => {
  const command = await run(PLOYZD, ["frobnicate"]);
  equal(command.code, 2);
  equal(command.stderr.split("\n")[0], 'error[invalid_argument]: Unknown command "frobnicate" for "ployzd"');
  match(command.stderr, /Usage: ployzd <command>/);
  const option = await run(PLOYZ, ["version", "--colour"]);
  equal(option.code, 2);
  equal(
    option.stderr.split("\n")[0],
    'error[invalid_argument]: Unknown option "--colour" for "ployz version"',
  );
  const json = await run(PLOYZ, ["version", "--json", "--colour"]);
  equal(json.code, 2);
  deepEqual(JSON.parse(json.stdout).error.code, "invalid_argument");
});

Deno.test("ployzd dial-stdio says which socket it could not reach and exits 1", async () => {
  // Launched under the dial-stdio set with the default layout; no daemon listens there in tests.
  const out = await run(PLOYZD, ["dial-stdio"]);
  equal(out.code, 1);
  match(
    out.stderr,
    /^error\[unavailable\]: Cannot connect to the Machine RPC socket "\/run\/ployz\/ployz\.sock"/,
  );
  ok(!out.stderr.includes("    at "), "no stack trace for an operator mistake");
});

Deno.test("the launchers pick each subcommand's permission set from deno.json", async () => {
  const expected: [string, string[], string][] = [
    [PLOYZD, ["serve"], "serve"],
    [PLOYZD, ["dns"], "dns"],
    [PLOYZD, ["observe"], "observe"],
    [PLOYZD, ["dial-stdio"], "dial-stdio"],
    [PLOYZD, ["version"], "none"],
    [PLOYZD, ["--help"], "none"],
    [PLOYZ, ["version"], "cli"],
    [PLOYZ, ["lab", "status"], "lab"],
  ];
  for (const [program, args, set] of expected) {
    const out = await run(program, args, { PLOYZ_LAUNCHER_PRINT: "1" });
    equal(out.code, 0, out.stderr);
    const argv = out.stdout.trim().split("\n");
    ok(
      argv.includes(`-P=${set}`),
      `${program} ${args.join(" ")} should run under -P=${set}: ${argv.join(" ")}`,
    );
    ok(argv.includes("--cached-only") && argv.includes("--frozen") && argv.includes("--no-prompt"));
    ok(argv.includes(join(ROOT, "deno.json")), "the launcher must name the config that holds the sets");
    // The V8 flags a unit and the daemon's supervised children use (lib/permissions/runtime_flags.ts).
    const named = permissionSetNames().find((name: PermissionSetName) => name === args[0]);
    const expectedV8 = program === PLOYZD && named !== undefined ? runtimeFlags(named) : [];
    deepEqual(argv.filter((a) => a.startsWith("--v8-flags")), expectedV8, `${program} ${args.join(" ")}`);
  }
});

Deno.test("bin/ployzd install runs under the install set plus only its release source and artifact", async () => {
  const base = permissionFlags(permissionSet("install"));
  // Arguments, the host:port added to --allow-net, the paths added to --allow-read.
  const cases: [string[], string | undefined, string[]][] = [
    [["--from", "/tmp/x/ployz-0.1.0-t.tar.gz", "--source", "/srv/releases"], undefined, [
      "/tmp/x/ployz-0.1.0-t.tar.gz",
      "/srv/releases",
    ]],
    [
      ["--upgrade", "--source", "https://user:secret@releases.example.com/ployz", "--version", "0.2.0"],
      "releases.example.com:443",
      [],
    ],
    [["--from", "/tmp/a.tar.gz", "--source=http://127.0.0.1:8787/"], "127.0.0.1:8787", ["/tmp/a.tar.gz"]],
    [["--status", "abcdef12"], undefined, []],
    [["--help"], undefined, []],
  ];
  for (const [args, host, reads] of cases) {
    const out = await run(PLOYZD, ["install", ...args], { PLOYZ_LAUNCHER_PRINT: "1" });
    equal(out.code, 0, out.stderr);
    const argv = out.stdout.trim().split("\n");
    ok(!argv.some((a) => a.startsWith("-P")), argv.join(" "));
    const flags = argv.filter((a) => /^--(allow|deny)-|^--ignore-env$/.test(a));
    const expected = base.map((f) => {
      if (f.startsWith("--allow-net=") && host !== undefined) return `${f},${host}`;
      if (f.startsWith("--allow-read=") && reads.length > 0) return `${f},${reads.join(",")}`;
      return f;
    });
    deepEqual(flags, expected, args.join(" "));
    deepEqual(argv.slice(-args.length - 2), [join(ROOT, "cmd", "ployzd.ts"), "install", ...args]);
    ok(!flags.join(" ").includes("secret"), "no credential reaches a grant");
  }
});

/**
 * A tree of its own for `program`'s launcher: the launchers, a stand-in deno (never run: the launcher only prints),
 * its sources and `bundle`, all a minute in the past, so the bundle starts fresh. `entry` runs the
 * launcher with `args` and answers the file it would run.
 */
async function launcherTree(
  program: "ployz" | "ployzd",
  bundle: string,
): Promise<
  { root: string; past: Date; entry(args: string[], env?: Record<string, string>): Promise<string> }
> {
  const root = await Deno.makeTempDir({ prefix: `${program}-launch-` });
  for (const dir of ["bin", "cmd", "lib/util", join(bundle, "..")]) {
    await Deno.mkdir(join(root, dir), { recursive: true });
  }
  for (const file of [program, "_launch.sh"]) {
    await Deno.copyFile(join(ROOT, "bin", file), join(root, "bin", file));
    await Deno.chmod(join(root, "bin", file), 0o755);
  }
  await Deno.writeTextFile(join(root, "deno"), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
  const source = `cmd/${program}.ts`;
  for (const file of ["deno.json", "deno.lock", source, "lib/util/mod.ts", bundle]) {
    await Deno.writeTextFile(join(root, file), "\n");
  }
  const past = new Date(Date.now() - 60_000);
  for (const path of ["deno.json", "deno.lock", "cmd", source, "lib", "lib/util", "lib/util/mod.ts"]) {
    await Deno.utime(join(root, path), past, past);
  }
  async function entry(args: string[], env: Record<string, string> = {}): Promise<string> {
    const out = await run(join(root, "bin", program), args, { PLOYZ_LAUNCHER_PRINT: "1", ...env });
    equal(out.code, 0, out.stderr);
    const argv = out.stdout.trim().split("\n");
    equal(argv.at(-1), args.at(-1), "the arguments follow the entry, the --bundle marker not among them");
    return argv.at(-2)!;
  }
  return { root, past, entry };
}

Deno.test("bin/ployz runs the bundled CLI only while no source is newer than the bundle", async () => {
  const { root, past, entry: launched } = await launcherTree("ployz", "dist/bundle/ployz.js");
  try {
    const entry = (env: Record<string, string> = {}): Promise<string> => launched(["ps"], env);
    equal(await entry(), join(root, "dist", "bundle", "ployz.js"));
    equal(await entry({ PLOYZ_LAUNCHER_BUNDLE: "0" }), join(root, "cmd", "ployz.ts"));
    // An edit after the bundle was made: the source runs, never the old bundle.
    await Deno.utime(join(root, "lib/util/mod.ts"), new Date(), new Date(Date.now() + 1_000));
    equal(await entry(), join(root, "cmd", "ployz.ts"));
    await Deno.utime(join(root, "lib/util/mod.ts"), past, past);
    // A file added (or removed) changes its directory.
    await Deno.writeTextFile(join(root, "lib", "added.ts"), "\n");
    equal(await entry(), join(root, "cmd", "ployz.ts"));
    await Deno.remove(join(root, "lib", "added.ts"));
    await Deno.utime(join(root, "lib"), past, past);
    equal(await entry(), join(root, "dist", "bundle", "ployz.js"));
    await Deno.remove(join(root, "dist", "bundle", "ployz.js"));
    equal(await entry(), join(root, "cmd", "ployz.ts"));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("bin/ployzd serve and observe, the units and the lab run the bundled daemon by one rule: only while it is fresh", async () => {
  const { root, past, entry } = await launcherTree("ployzd", DAEMON_BUNDLE);
  try {
    const launched = (subcommand: string): Promise<string> => entry([subcommand]);
    const agree = async (expected: string): Promise<void> => {
      equal(await launched("serve"), expected);
      equal(daemonEntry("serve", root), expected, "the units and the lab decide as the launcher does");
      equal(await launched("observe"), expected);
      equal(daemonEntry("observe", root), expected);
      // The other subcommands always run their source.
      equal(await launched("dns"), join(root, "cmd", "ployzd.ts"));
      equal(daemonEntry("dns", root), join(root, "cmd", "ployzd.ts"));
    };
    await agree(join(root, DAEMON_BUNDLE));
    await Deno.utime(join(root, "cmd/ployzd.ts"), new Date(), new Date(Date.now() + 1_000));
    await agree(join(root, "cmd", "ployzd.ts"));
    await Deno.utime(join(root, "cmd/ployzd.ts"), past, past);
    await agree(join(root, DAEMON_BUNDLE));
    await Deno.writeTextFile(join(root, "lib", "util", "added.ts"), "\n");
    await agree(join(root, "cmd", "ployzd.ts"));
    await Deno.remove(join(root, "lib", "util", "added.ts"));
    await Deno.utime(join(root, "lib", "util"), past, past);
    await agree(join(root, DAEMON_BUNDLE));
    await Deno.remove(join(root, DAEMON_BUNDLE));
    await agree(join(root, "cmd", "ployzd.ts"));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
