// Helpers for end-to-end tests and benchmarks that run the real `ployzd serve` and `ployz` under their
// relocated permission sets, and for a throwaway dockerd that a test may stop, restart or `swarm init`.
import { join } from "node:path";
import {
  type Layout,
  permissionFlags,
  type PermissionSet,
  permissionSet,
  relocate,
} from "../lib/permissions/mod.ts";
import { connectMachine, RpcError } from "../lib/rpc/mod.ts";
import { ROOT, run } from "./harness.ts";

/** The development or CI engine, as `PLOYZ_DOCKER_SOCKET` names it. */
export const DEV_SOCKET: string = Deno.env.get("PLOYZ_DOCKER_SOCKET") ?? "/var/run/docker.sock";

/** The image every test Service runs. */
export const IMAGE = "ployz-test/busybox:1";

/** True when `path` is a unix socket. */
export function isSocket(path: string): boolean {
  try {
    return Deno.statSync(path).isSocket === true;
  } catch {
    return false;
  }
}

/** True when this process may start its own dockerd: root, dockerd and docker on PATH, the dev engine up. */
export function canStartEngine(): boolean {
  if (Deno.uid() !== 0 || !isSocket(DEV_SOCKET)) return false;
  const path = (Deno.env.get("PATH") ?? "").split(":");
  return ["dockerd", "docker"].every((bin) =>
    path.some((dir) => {
      try {
        return Deno.statSync(join(dir, bin)).isFile;
      } catch {
        return false;
      }
    })
  );
}

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

/** Spawns `cmd/<program>.ts` under the named permission set, relocated to the env's layout. */
export function spawnProgram(
  env: MachineEnv,
  program: "ployzd" | "ployz",
  set: string,
  args: string[],
): Deno.ChildProcess {
  const flags = permissionFlags(relocatedSet(set, env.layout));
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "--quiet", ...flags, join(ROOT, "cmd", `${program}.ts`), ...args],
    cwd: env.root,
    env: env.vars,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/** A finished program. */
export interface Result {
  /** Exit code. */
  code: number;
  /** Everything it wrote to stdout. */
  stdout: string;
  /** Everything it wrote to stderr. */
  stderr: string;
}

/** Runs the `ployz` CLI to completion under the `cli` set. */
export async function ployz(env: MachineEnv, ...args: string[]): Promise<Result> {
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
}

/** Starts `ployzd serve` and waits until its socket answers DescribeContract. */
export async function startServe(env: MachineEnv): Promise<Serving> {
  const child = spawnProgram(env, "ployzd", "serve", ["serve", "--rescan-seconds", "5"]);
  void child.stdout.cancel();
  const stderr = new Response(child.stderr).text();
  const serving: Serving = {
    child,
    stderr,
    async [Symbol.asyncDispose](): Promise<void> {
      try {
        child.kill("SIGTERM");
      } catch {
        // Already gone.
      }
      await child.status;
      await stderr;
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
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The NDJSON line of type `outcome` a `--json` deploy printed. */
export function outcomeOf(result: Result): Record<string, unknown> {
  const line = result.stdout.trim().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l))
    .find((e) => e.type === "outcome");
  if (line === undefined) throw new Error(`No outcome line in:\n${result.stdout}\n${result.stderr}`);
  return line.outcome;
}

/** A random /24 under `prefix` (e.g. `10.214`), for a Machine subnet unlikely to collide with another test's. */
export function randomSubnet(prefix: string): string {
  return `${prefix}.${1 + Math.floor(Math.random() * 254)}.0/24`;
}

/** A dockerd of its own, started by `.ci/dockerd.sh` under a temp state dir. */
export interface ThrowawayEngine extends AsyncDisposable {
  /** Its state dir. */
  state: string;
  /** Its API socket. */
  socket: string;
  /** Its data root (containers' log files live under it). */
  dataRoot: string;
  /** Runs the docker CLI against it. */
  docker(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  /**
   * Stops it and waits until it is gone. `stop` (SIGTERM) stops its containers first, as `systemctl stop`
   * would; `crash` kills dockerd, its containerd, the shims and the containers at once, as a host losing its
   * engine would (killing dockerd alone leaves tasks that a restarted engine reports as "already exists").
   */
  stop(how?: "stop" | "crash"): Promise<void>;
  /** Starts it again on the same state dir. */
  start(): Promise<void>;
  /** What async dispose does, synchronously, for an `unload` handler. */
  disposeSync(): void;
}

/** Kills, by pid, every process of the engine under `state` (containerd, shims) and the containers' processes. */
function killEngineProcesses(state: string): string {
  return `
for p in $(grep -l -a -- "${state}/exec" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
  [ "$p" = "$$" ] || { pkill -KILL -P "$p"; kill -KILL "$p"; } 2>/dev/null
done
`;
}

/**
 * Removes what a test left on the engine, stops it and deletes its state dir, and cleans what outlives it on the
 * host: its bridges (Ployz's, a Swarm's docker_gwbridge; never the shared docker0), and after a crash its shims
 * with their containers and its mounts.
 */
function teardownScript(state: string): string {
  return `
export DOCKER_HOST=unix://${state}/docker.sock
bridges=""
if curl -fsS --max-time 2 --unix-socket ${state}/docker.sock http://d/_ping >/dev/null 2>&1; then
  docker swarm leave --force >/dev/null 2>&1
  ids=$(docker ps -aq); [ -z "$ids" ] || docker rm -f $ids >/dev/null 2>&1
  for n in $(docker network ls -q --filter driver=bridge); do
    b=$(docker network inspect -f '{{index .Options "com.docker.network.bridge.name"}}' "$n" 2>/dev/null)
    [ -n "$b" ] || b="br-\${n:0:12}"
    [ "$b" = docker0 ] || bridges="$bridges $b"
  done
  docker network prune -f >/dev/null 2>&1
fi
if [ -f ${state}/docker.pid ]; then
  pid=$(cat ${state}/docker.pid)
  kill "$pid" 2>/dev/null
  for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
fi
${killEngineProcesses(state)}
for b in $bridges; do ip link del "$b" 2>/dev/null; done
grep -o " ${state}[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l
rm -rf ${state}
true
`;
}

function alive(pid: number): boolean {
  try {
    return Deno.statSync(`/proc/${pid}`).isDirectory;
  } catch {
    return false;
  }
}

async function sh(script: string, env: Record<string, string> = {}): Promise<Result> {
  return await run("bash", ["-c", script], env);
}

/**
 * Starts a dockerd under a fresh temp dir and loads `IMAGE` into it from the dev engine. Dispose it to remove
 * what a test left on it (containers, networks, swarm), stop it and delete its state dir.
 */
export async function startEngine(prefix: string): Promise<ThrowawayEngine> {
  const state = await Deno.makeTempDir({ prefix });
  const socket = join(state, "docker.sock");
  const dockerEnv = { DOCKER_HOST: `unix://${socket}` };
  async function start(): Promise<void> {
    const r = await run(join(ROOT, ".ci", "dockerd.sh"), [state]);
    if (r.code !== 0) throw new Error(`Cannot start dockerd in "${state}": ${r.stderr.trim()}`);
  }
  async function stop(how: "stop" | "crash" = "stop"): Promise<void> {
    let pid: number;
    try {
      pid = Number((await Deno.readTextFile(join(state, "docker.pid"))).trim());
    } catch {
      return;
    }
    if (!alive(pid)) return;
    if (how === "crash") {
      Deno.kill(pid, "SIGKILL");
      await sh(killEngineProcesses(state));
    } else Deno.kill(pid, "SIGTERM");
    const until = Date.now() + 60_000;
    while (alive(pid) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 100));
    if (alive(pid)) Deno.kill(pid, "SIGKILL");
    while (alive(pid)) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const engine: ThrowawayEngine = {
    state,
    socket,
    dataRoot: join(state, "data"),
    docker: (...args) => run("docker", args, dockerEnv),
    stop,
    start,
    disposeSync(): void {
      new Deno.Command("bash", { args: ["-c", teardownScript(state)], stdout: "null", stderr: "null" })
        .outputSync();
    },
    async [Symbol.asyncDispose](): Promise<void> {
      await sh(teardownScript(state));
    },
  };
  try {
    await start();
    const load = await sh(
      `docker -H unix://${DEV_SOCKET} save ${IMAGE} | docker -H unix://${socket} load -q`,
    );
    if (load.code !== 0) throw new Error(`Cannot load "${IMAGE}" into "${socket}": ${load.stderr.trim()}`);
  } catch (error) {
    await engine[Symbol.asyncDispose]();
    throw error;
  }
  return engine;
}
