// Running the real `ployzd serve` and `ployz` under their relocated permission sets, as one Machine's daemon and
// its operator would.
import { join } from "node:path";
import {
  type Layout,
  permissionFlags,
  type PermissionSet,
  permissionSet,
  relocate,
} from "../../lib/permissions/mod.ts";
import { connectMachine, RpcError } from "../../lib/rpc/mod.ts";
import { stopChild } from "../../lib/util/mod.ts";
import { sleep } from "./poll.ts";
import { ROOT, type RunResult } from "./spawn.ts";

/** Where one Machine's daemon and CLI run. */
export interface MachineEnv {
  /** Scratch root; the CLI's cwd and HOME. */
  root: string;
  /** The daemon's layout. */
  layout: Layout;
  /** The whole environment of both programs. */
  vars: Record<string, string>;
}

/** A layout under `root` against the engine at `dockerSocket`, its objects labelled `ployz.test=<run>`. */
export async function machineEnv(
  root: string,
  options: { dockerSocket: string; dockerRoot: string; network: string; run: string },
): Promise<MachineEnv> {
  const layout: Layout = {
    dataDir: join(root, "data"),
    runDir: join(root, "run"),
    dockerSocket: options.dockerSocket,
    dockerRoot: options.dockerRoot,
  };
  await Deno.mkdir(layout.runDir, { recursive: true });
  const vars = {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    NO_COLOR: "1",
    RUST_BACKTRACE: "0",
    HOME: root,
    PLOYZ_CONFIG_DIR: join(root, "config"),
    PLOYZ_DATA_DIR: layout.dataDir,
    PLOYZ_RUN_DIR: layout.runDir,
    PLOYZ_DOCKER_SOCKET: layout.dockerSocket,
    PLOYZ_DOCKER_ROOT: layout.dockerRoot,
    PLOYZ_DOCKER_NETWORK: options.network,
    PLOYZ_DOCKER_LABELS: `ployz.test=${options.run}`,
  };
  return { root, layout, vars };
}

/**
 * A permission set relocated to `layout`; `serve` also runs this deno, so the daemon can spawn `ployzd dns` as a
 * child where systemd does not run (here).
 */
export function relocatedSet(set: string, layout: Layout): PermissionSet {
  const relocated = relocate(permissionSet(set), layout);
  if (set !== "serve" || relocated.run === true) return relocated;
  return { ...relocated, run: [...(Array.isArray(relocated.run) ? relocated.run : []), Deno.execPath()] };
}

/**
 * Spawns `cmd/<program>.ts` under the named permission set, relocated to the env's layout, in the env's root;
 * stdin is closed unless `stdin` is "piped".
 */
export function spawnProgram(
  env: MachineEnv,
  program: "ployzd" | "ployz",
  set: string,
  args: string[],
  stdin: "piped" | "null" = "null",
  runtime: string[] = [],
): Deno.ChildProcess {
  const flags = permissionFlags(relocatedSet(set, env.layout));
  return new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-prompt",
      "--quiet",
      ...runtime,
      ...flags,
      join(ROOT, "cmd", `${program}.ts`),
      ...args,
    ],
    cwd: env.root,
    env: env.vars,
    clearEnv: true,
    stdin,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/** Runs the `ployz` CLI to completion under the `cli` set. */
export async function ployz(env: MachineEnv, ...args: string[]): Promise<RunResult> {
  const child = spawnProgram(env, "ployz", "cli", args);
  const [status, stdout, stderr] = await Promise.all([
    child.status,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ]);
  return { code: status.code, stdout, stderr };
}

/** A running `ployzd serve`. */
export interface Serving extends AsyncDisposable {
  /** The daemon process. */
  child: Deno.ChildProcess;
  /** Its stderr, once it exits. */
  stderr: Promise<string>;
  /** Stops it with SIGTERM (once; later calls wait for the same exit) and returns its exit code and stderr. */
  stop(): Promise<{ code: number; stderr: string }>;
}

/** Starts `ployzd serve` and waits until its socket answers DescribeContract. */
export async function startServe(
  env: MachineEnv,
  options: { rescanSeconds?: number; runtime?: string[] } = {},
): Promise<Serving> {
  const child = spawnProgram(
    env,
    "ployzd",
    "serve",
    [
      "serve",
      "--rescan-seconds",
      String(options.rescanSeconds ?? 5),
    ],
    "null",
    options.runtime,
  );
  void child.stdout.cancel();
  const stderr = new Response(child.stderr).text();
  // Bounded: the daemon gives up on its own stop after 30 s (exit 1, naming what it waited for); one still
  // running 15 s later is killed (code 137), its log telling how far it got.
  async function stop(): Promise<{ code: number; stderr: string }> {
    return { code: (await stopChild(child, { killAfterMs: 45_000 })).code, stderr: await stderr };
  }
  const serving: Serving = {
    child,
    stderr,
    stop,
    async [Symbol.asyncDispose](): Promise<void> {
      await stop();
    },
  };
  const until = Date.now() + 60_000;
  for (;;) {
    using client = connectMachine({ socketPath: join(env.layout.runDir, "ployz.sock") });
    try {
      await client.describeContract();
      return serving;
    } catch (error) {
      if (!(error instanceof RpcError) || error.code !== "unavailable" || Date.now() > until) {
        child.kill("SIGKILL");
        await child.status;
        throw new Error(`ployzd serve did not answer: ${await stderr}`, { cause: error });
      }
    }
    await sleep(200);
  }
}

/**
 * The NDJSON line of type `outcome` a `--json` deploy printed; with `onlyJson`, any stdout line that is not JSON
 * fails the test.
 */
export function outcomeOf(result: RunResult, options: { onlyJson?: boolean } = {}): Record<string, unknown> {
  const lines = result.stdout.trim().split("\n").filter((l) =>
    options.onlyJson === true || l.startsWith("{")
  );
  const line = lines.map((l) => JSON.parse(l)).find((e) => e.type === "outcome");
  if (line === undefined) throw new Error(`No outcome line in:\n${result.stdout}\n${result.stderr}`);
  return line.outcome;
}

/** The last Outcome in a `deploy --json` transcript (NDJSON), failing the test when there is none. */
export function lastOutcome<T = Record<string, unknown>>(ndjson: string): T {
  const lines = ndjson.trim().split("\n").map((l) => JSON.parse(l));
  const outcome = lines.reverse().find((l) => l.type === "outcome");
  if (outcome === undefined) throw new Error(`No outcome line in: ${ndjson}`);
  return outcome.outcome as T;
}

/** One event of a `deploy --json` transcript. */
// deno-lint-ignore no-explicit-any
export type DeployEventJson = Record<string, any>;

/** How {@link followDeploy} runs `ployz deploy`. */
export interface FollowDeployOptions {
  /** The Compose file. */
  compose: string;
  /** Flags after `-f COMPOSE -y --json` (`--monitor 2s`, `--parallel 1`…). */
  flags: string[];
  /** The CLI's environment (PATH and NO_COLOR=1 are added). */
  env: Record<string, string>;
  /** A command line the CLI runs under (`ip netns exec NS`); none by default. */
  via?: string[];
}

/**
 * Runs this checkout's `ployz deploy -f COMPOSE -y --json FLAGS…` with exactly `env` (plus PATH) and hands each
 * event to `onEvent` as it arrives, so a test can act on the Cluster mid-Deploy; answers the exit code, the whole
 * transcript and stderr.
 */
export async function followDeploy(
  options: FollowDeployOptions,
  onEvent: (event: DeployEventJson) => Promise<void> | void,
): Promise<{ code: number; transcript: string; stderr: string }> {
  const { compose, flags, env, via = [] } = options;
  const argv = [...via, join(ROOT, "bin", "ployz"), "deploy", "-f", compose, "-y", "--json", ...flags];
  const child = new Deno.Command(argv[0], {
    args: argv.slice(1),
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", NO_COLOR: "1", ...env },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  let transcript = "";
  let buffered = "";
  for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
    transcript += chunk;
    buffered += chunk;
    const lines = buffered.split("\n");
    buffered = lines.pop() ?? "";
    for (const line of lines) await onEvent(JSON.parse(line));
  }
  const { code } = await child.status;
  return { code, transcript, stderr: await stderr };
}
