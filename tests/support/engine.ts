// A dockerd of the test's own, started by `.ci/dockerd.sh` under a temp state dir, that a test may stop, crash,
// restart or `swarm init` without touching the shared engine.
import { join } from "node:path";
import { DOCKER_SOCKET, IMAGE } from "./docker.ts";
import { sleep } from "./poll.ts";
import { alive, ROOT, run, type RunResult } from "./spawn.ts";

/** A dockerd of its own, started by `.ci/dockerd.sh` under a temp state dir. */
export interface ThrowawayEngine extends AsyncDisposable {
  /** Its state dir. */
  state: string;
  /** Its API socket. */
  socket: string;
  /** Its data root (containers' log files live under it). */
  dataRoot: string;
  /** Runs the docker CLI against it. */
  docker(...args: string[]): Promise<RunResult>;
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

async function sh(script: string, env: Record<string, string> = {}): Promise<RunResult> {
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
    while (alive(pid) && Date.now() < until) await sleep(100);
    if (alive(pid)) Deno.kill(pid, "SIGKILL");
    while (alive(pid)) await sleep(100);
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
      `docker -H unix://${DOCKER_SOCKET} save ${IMAGE} | docker -H unix://${socket} load -q`,
    );
    if (load.code !== 0) throw new Error(`Cannot load "${IMAGE}" into "${socket}": ${load.stderr.trim()}`);
  } catch (error) {
    await engine[Symbol.asyncDispose]();
    throw error;
  }
  return engine;
}
