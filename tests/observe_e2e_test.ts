// `ployzd observe` under its relocated permission set against a real dockerd: a busybox container with the
// `local` log driver writes numbered lines on stdout and stderr; observe.sock returns exactly those lines in time
// order, across a `kill -9` of observe mid-stream, and after the container is removed.
import assert from "node:assert/strict";
import { join } from "node:path";
import Docker from "dockerode";
import { layoutFromEnv, permissionFlags, permissionSet, relocate } from "../lib/permissions/mod.ts";
import { ROOT } from "./support/spawn.ts";
import { DOCKER_SOCKET, dockerRootOf, IMAGE } from "./support/docker.ts";
import { needs } from "./support/needs.ts";
import { eventually, sleep } from "./support/poll.ts";

const BURSTS = 6;
const PER_BURST = 50;

interface WireLine {
  stream: string;
  text: string;
  "time_nano": string;
  "container_id": string;
  service: string;
  deployment: string;
  "machine_id": string;
}

class Observe {
  #child: Deno.ChildProcess | undefined;
  #stderr: Promise<string> | undefined;
  constructor(readonly env: Record<string, string>) {}

  start(): void {
    const layout = layoutFromEnv((k) => this.env[k]);
    const flags = permissionFlags(relocate(permissionSet("observe"), layout));
    this.#child = new Deno.Command(Deno.execPath(), {
      args: ["run", "--quiet", "--no-prompt", ...flags, join(ROOT, "cmd/ployzd.ts"), "observe"],
      env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", NO_COLOR: "1", RUST_BACKTRACE: "0", ...this.env },
      clearEnv: true,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    this.#stderr = new Response(this.#child.stderr).text();
  }

  async stop(signal: Deno.Signal): Promise<{ code: number; stderr: string }> {
    const child = this.#child;
    if (child === undefined) return { code: 0, stderr: "" };
    this.#child = undefined;
    try {
      child.kill(signal);
    } catch {
      // Already gone.
    }
    const status = await child.status;
    return { code: status.code, stderr: await this.#stderr! };
  }
}

async function history(client: Deno.HttpClient, body: Record<string, unknown>): Promise<WireLine[]> {
  const response = await fetch("http://observe/observe/v1/log_history", {
    method: "POST",
    body: JSON.stringify(body),
    client,
  });
  const json = await response.json();
  assert.equal(response.status, 200, JSON.stringify(json));
  return json.lines;
}

function expected(stream: "out" | "err"): string[] {
  const lines: string[] = [];
  for (let b = 1; b <= BURSTS; b++) for (let i = 1; i <= PER_BURST; i++) lines.push(`${stream} ${b}-${i}`);
  return lines;
}

Deno.test(needs(["docker"], {
  name: "ployzd observe stores a real container's local logs exactly once, across kill -9 and removal",
  async fn(): Promise<void> {
    const docker = new Docker({ socketPath: DOCKER_SOCKET });
    const dockerRoot = await dockerRootOf(docker);
    const root = await Deno.makeTempDir({ prefix: "ployz-observe-e2e-" });
    const env = {
      PLOYZ_DATA_DIR: join(root, "data"),
      PLOYZ_RUN_DIR: join(root, "run"),
      PLOYZ_DOCKER_ROOT: dockerRoot,
      PLOYZ_DOCKER_SOCKET: DOCKER_SOCKET,
    };
    await Deno.mkdir(join(env.PLOYZ_DATA_DIR, "observe"), { recursive: true });
    await Deno.mkdir(env.PLOYZ_RUN_DIR, { recursive: true });
    const sockPath = join(env.PLOYZ_RUN_DIR, "observe.sock");
    const client = Deno.createHttpClient({ proxy: { transport: "unix", path: sockPath } });
    const run = crypto.randomUUID().slice(0, 8);
    const observe = new Observe(env);
    // deno-lint-ignore no-explicit-any
    let container: any;
    try {
      const script = `for b in $(seq 1 ${BURSTS}); do for i in $(seq 1 ${PER_BURST}); do ` +
        `echo "out $b-$i"; echo "err $b-$i" >&2; done; sleep 1; done`;
      container = await docker.createContainer({
        Image: IMAGE,
        name: `ployz-observe-e2e-${run}`,
        Cmd: ["sh", "-c", script],
        Labels: {
          "ployz.managed": "1",
          "ployz.machine": "machine-e2e",
          "ployz.project": "shop",
          "ployz.service": `web-${run}`,
          "ployz.deployment": "dep-e2e",
          "ployz.slot": "0",
          "ployz.test": run,
        },
        HostConfig: {
          NetworkMode: "none",
          LogConfig: { Type: "local", Config: { "max-size": "20m", "max-file": "5", compress: "false" } },
        },
      });
      const selector = { service: `web-${run}`, since: "0", limit: 10_000 };
      observe.start();
      await eventually(30_000, "observe.sock", async () => (await history(client, selector)) && true, 250);
      await container.start();

      // Some lines are in, more are coming: kill -9 mid-stream, then start again.
      await eventually(
        30_000,
        "the first lines",
        async () => (await history(client, selector)).length >= 40 || undefined,
        250,
      );
      const killed = await observe.stop("SIGKILL");
      assert.notEqual(killed.code, 0);
      observe.start();

      await container.wait();
      const all = BURSTS * PER_BURST * 2;
      const lines = await eventually(60_000, "every line", async () => {
        const got = await history(client, selector);
        return got.length >= all ? got : undefined;
      }, 250);
      assert.equal(lines.length, all, "no line twice");
      assert.deepEqual(lines.filter((l) => l.stream === "stdout").map((l) => l.text), expected("out"));
      assert.deepEqual(lines.filter((l) => l.stream === "stderr").map((l) => l.text), expected("err"));
      for (let i = 1; i < lines.length; i++) {
        assert.ok(
          BigInt(lines[i - 1].time_nano) <= BigInt(lines[i].time_nano),
          `line ${i} is out of time order`,
        );
      }
      assert.deepEqual(
        [lines[0].container_id, lines[0].deployment, lines[0].machine_id],
        [container.id, "dep-e2e", "machine-e2e"],
      );

      // Removed: Docker deletes its files, the Observe Store keeps the lines.
      await container.remove({ force: true });
      container = undefined;
      await sleep(4000);
      const after = await history(client, selector);
      assert.equal(after.length, all);

      const stopped = await observe.stop("SIGTERM");
      assert.equal(stopped.code, 0, stopped.stderr);
      assert.doesNotMatch(stopped.stderr, /Cannot read the logs|step failed/, stopped.stderr);
    } finally {
      client.close();
      await observe.stop("SIGKILL");
      if (container !== undefined) await container.remove({ force: true }).catch(() => {});
      await Deno.remove(root, { recursive: true });
    }
  },
}));
