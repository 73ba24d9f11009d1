// `ployz logs` end to end through Machine RPC: a real `ployzd serve` under its relocated permission set, which
// starts `ployzd observe` itself (no systemd here: a child under the relocated observe set), against the real
// dockerd. Within a bound observe.sock answers and status reports the Observe Store running. A Ployz-labelled busybox container writes known lines and is
// removed; `ployz logs` still returns its lines with the answering Machine named, `--grep` filters, an unknown
// Service answers empty with a note, TailLogs streams through the daemon, and with observe killed under the daemon
// (which does not respawn it) the Machine is listed as failed with the reason and the exit code is 1, because no
// Machine answered.
import assert from "node:assert/strict";
import { join } from "node:path";
import Docker from "dockerode";
import { connectMachine, readTailFrame, RpcError } from "../lib/rpc/mod.ts";
import { type MachineEnv, machineEnv, ployz, spawnProgram, startServe } from "./support/daemon.ts";
import { DOCKER_SOCKET, dockerRootOf, IMAGE, isSocket } from "./support/docker.ts";
import { eventually } from "./support/poll.ts";
import { needs } from "./support/needs.ts";
import { stopChild } from "../lib/util/mod.ts";

const RUN = crypto.randomUUID().slice(0, 8);
const PROJECT = `logs-${RUN}`;
const LINES = ["hello 1", "hello 2", "special 3", "hello 4", "err 5"];

Deno.test(needs(["docker"], {
  name: "ployz logs reads a removed container's output through ployzd serve and the ployzd observe it starts",
  async fn(): Promise<void> {
    const docker = new Docker({ socketPath: DOCKER_SOCKET });
    const dockerRoot = await dockerRootOf(docker);
    const root = await Deno.makeTempDir({ prefix: "ployz-logs-e2e-" });
    const env = await machineEnv(root, {
      dockerSocket: DOCKER_SOCKET,
      dockerRoot,
      network: `ployz-logs-${RUN}`,
      run: RUN,
    });
    try {
      await scenario(env, docker);
    } finally {
      await Deno.remove(root, { recursive: true }).catch(() => {});
    }
  },
}));

/** The `ployzd observe` processes whose command line names this run dir. */
async function observePids(runDir: string): Promise<number[]> {
  const pids: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const argv = await Deno.readTextFile(`/proc/${entry.name}/cmdline`).then(
      (t) => t.split("\0"),
      (): string[] => [],
    );
    if (argv.includes("observe") && argv.some((a) => a.includes(runDir))) pids.push(Number(entry.name));
  }
  return pids;
}

async function scenario(env: MachineEnv, docker: Docker): Promise<void> {
  // deno-lint-ignore no-explicit-any
  let container: any;
  await using _serve = await startServe(env);
  using client = connectMachine({ socketPath: join(env.layout.runDir, "ployz.sock") });
  try {
    // Nothing but the daemon starts the Observe Store.
    await eventually(60_000, "observe.sock to answer", async () => {
      const status = await client.status();
      return status.observe?.running === true ? true : undefined;
    });
    assert.ok(isSocket(join(env.layout.runDir, "observe.sock")));
    const contract = await client.describeContract();
    const name = contract.machine_name;
    for (const capability of ["log_history", "tail_logs", "metric_history"]) {
      assert.ok(contract.capabilities.includes(`ployz.observe.${capability}.v1`), capability);
    }

    const labels = {
      "ployz.managed": "1",
      "ployz.machine": contract.machine_id,
      "ployz.project": PROJECT,
      "ployz.service": "web",
      "ployz.deployment": "dep-1",
      "ployz.slot": "0",
      "ployz.test": RUN,
    };
    const script = LINES.map((l) => l.startsWith("err") ? `echo "${l}" >&2` : `echo "${l}"`).join("; ");
    container = await docker.createContainer({
      Image: IMAGE,
      name: `ployz-logs-e2e-${RUN}`,
      Cmd: ["sh", "-c", script],
      Labels: labels,
      HostConfig: { NetworkMode: "none", LogConfig: { Type: "local", Config: {} } },
    });
    await container.start();
    await container.wait();
    const selector = { project: PROJECT, service: "web" };
    await eventually(60_000, "every line through the daemon", async () => {
      const answer = await client.logHistory({ selector, since: "0", limit: 100 });
      return answer.lines.length >= LINES.length ? answer : undefined;
    });
    // The container is gone; its output is not.
    await container.remove({ force: true });
    container = undefined;

    const all = await ployz(env, "logs", `${PROJECT}/web`, "--since", "10m");
    assert.equal(all.code, 0, all.stderr);
    const printed = all.stdout.trim().split("\n");
    // Docker reads stdout and stderr through separate pipes, so only each stream's own order is fixed.
    const texts = (stderr: boolean): string[] =>
      printed.filter((l) => l.includes(" (stderr) | ") === stderr).map((l) => l.split(" | ")[1]);
    assert.deepEqual(texts(false), LINES.filter((l) => !l.startsWith("err")));
    assert.deepEqual(texts(true), ["err 5"]);
    const times = printed.map((l) => l.split(" ")[0]);
    assert.deepEqual(times, [...times].sort(), "merged in time order");
    for (const line of printed) assert.ok(line.includes(` ${name} `), `Machine named on: ${line}`);
    assert.equal(all.stderr, "", "every Machine answered: nothing to list");

    const grep = await ployz(env, "logs", `${PROJECT}/web`, "--grep", "special", "--json");
    assert.equal(grep.code, 0, grep.stderr);
    const answer = JSON.parse(grep.stdout);
    assert.deepEqual(answer.lines.map((l: { text: string }) => l.text), ["special 3"]);
    assert.equal(answer.lines[0].machine_name, name);
    assert.equal(answer.lines[0].machine_id, contract.machine_id);
    assert.equal(answer.lines[0].deployment, "dep-1");
    assert.deepEqual(answer.failures, []);
    assert.deepEqual(answer.omissions, []);

    const unknown = await ployz(env, "logs", `${PROJECT}/nothing`);
    assert.equal(unknown.code, 0, unknown.stderr);
    assert.equal(unknown.stdout, "");
    assert.match(unknown.stderr, new RegExp(`Machine "${name}": This Machine holds no output of`));

    // TailLogs through the daemon: the backlog since the start, with the Machine named on each line.
    const stream = await client.tailLogs({ selector, since: "0", backlog: 100 });
    const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
    const tailed: string[] = [];
    let pending = "";
    while (tailed.length < LINES.length) {
      const { value, done } = await reader.read();
      if (done) break;
      pending += value;
      const parts = pending.split("\n");
      pending = parts.pop()!;
      for (const part of parts) {
        const frame = readTailFrame(JSON.parse(part));
        assert.ok(frame !== undefined, part);
        assert.notEqual(frame.type, "heartbeat", "heartbeats only when asked for");
        if (frame.type === "line") {
          assert.equal(frame.machine_name, name);
          tailed.push(frame.text);
        }
      }
    }
    await reader.cancel();
    assert.deepEqual(tailed.toSorted(), LINES.toSorted());

    // -f: the history, then lines stored later, each printed once although the tail overlaps the history.
    const follow = spawnProgram(env, "ployz", "cli", ["logs", `${PROJECT}/web`, "-f", "--since", "10m"]);
    const followErr = new Response(follow.stderr).text();
    const followed: string[] = [];
    const followReader = follow.stdout.pipeThrough(new TextDecoderStream()).getReader();
    try {
      const late = await docker.createContainer({
        Image: IMAGE,
        name: `ployz-logs-e2e-late-${RUN}`,
        Cmd: ["sh", "-c", "sleep 2; echo late 6"],
        Labels: { ...labels, "ployz.deployment": "dep-2", "ployz.slot": "1" },
        HostConfig: { NetworkMode: "none", LogConfig: { Type: "local", Config: {} } },
      });
      container = late;
      await late.start();
      let buffered = "";
      const deadline = setTimeout(() => follow.kill("SIGKILL"), 60_000);
      while (!followed.includes("late 6")) {
        const { value, done } = await followReader.read();
        if (done) break;
        buffered += value;
        const parts = buffered.split("\n");
        buffered = parts.pop()!;
        followed.push(...parts.map((l) => l.split(" | ")[1]));
      }
      clearTimeout(deadline);
    } finally {
      await followReader.cancel().catch(() => {});
      await stopChild(follow);
    }
    assert.deepEqual(followed.toSorted(), [...LINES, "late 6"].toSorted(), await followErr);
    await container.remove({ force: true });
    container = undefined;

    // Metrics go through the same fan-out: the Machine answers (samples or named gaps), never a bare zero.
    const top = await ployz(env, "top", "--json");
    assert.equal(top.code, 0, top.stderr);
    const topAnswer = JSON.parse(top.stdout);
    assert.deepEqual(topAnswer.machines.map((m: { machine_name: string }) => m.machine_name), [name]);
    assert.deepEqual(topAnswer.failures, []);
    const metrics = await ployz(env, "metrics", `${PROJECT}/web`, "--since", "1h", "--json");
    assert.equal(metrics.code, 0, metrics.stderr);
    assert.equal(JSON.parse(metrics.stdout).machines[0].machine_name, name);

    // Observe down: the only Machine failed, named with the reason; no Machine answered, so exit 1.
    const pids = await observePids(env.layout.runDir);
    assert.equal(pids.length, 1, `one ployzd observe for this Machine: ${pids}`);
    Deno.kill(pids[0], "SIGTERM");
    await eventually(
      30_000,
      "observe to exit",
      async () => (await observePids(env.layout.runDir)).length === 0 || undefined,
    );
    const status = await client.status();
    assert.equal(status.observe?.running, false);
    assert.match(status.observe?.error ?? "", /observe\.sock/);
    await assert.rejects(
      client.logHistory({ selector, since: "0", limit: 10 }),
      (error) => error instanceof RpcError && error.code === "unavailable",
    );
    const down = await ployz(env, "logs", `${PROJECT}/web`);
    assert.equal(down.code, 1, down.stdout);
    assert.equal(down.stdout, "");
    assert.match(down.stderr, new RegExp(`Machine "${name}" \\(${contract.machine_id}\\) did not answer`));
    assert.match(down.stderr, /unavailable/);
    assert.match(down.stderr, /Observe Store/);
    const topDown = await ployz(env, "top");
    assert.equal(topDown.code, 1, topDown.stdout);
    assert.match(topDown.stderr, new RegExp(`Machine "${name}" \\(${contract.machine_id}\\) did not answer`));
  } finally {
    if (container !== undefined) await container.remove({ force: true }).catch(() => {});
  }
}
