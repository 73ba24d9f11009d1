// The real programs through their launchers: help, version, usage mistakes, unbuilt subcommands, and the
// permission set each launcher picks.
import { deepEqual, equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import { type PermissionSetName, permissionSetNames, runtimeFlags } from "../lib/permissions/mod.ts";
import { ROOT, run } from "./support/spawn.ts";

const PLOYZD = join(ROOT, "bin", "ployzd");
const PLOYZ = join(ROOT, "bin", "ployz");

Deno.test("ployzd version prints the release and --json is machine-readable", async () => {
  const text = await run(PLOYZD, ["version"]);
  equal(text.code, 0, text.stderr);
  match(text.stdout, /^ployzd \d+\.\d+\.\d+ \(deno 2\.9\.\d+, /);
  const json = await run(PLOYZD, ["version", "--json"]);
  equal(
    JSON.parse(json.stdout).version,
    JSON.parse((await run(PLOYZ, ["version", "--json"])).stdout).version,
  );
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
    [PLOYZD, ["install"], "install"],
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
