// Deploy under faults, end to end: Docker stopped mid-deploy (on an engine of the test's own), a Machine that
// lacks a capability the client needs, and bad Compose files through the real CLI.
import { deepEqual, equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import Docker from "dockerode";
import {
  advertisedCapabilities,
  createRpcApp,
  listenUnix,
  PROTOCOL_MAJOR,
  type RpcHandlers,
} from "../lib/rpc/mod.ts";
import { machineEnv, outcomeOf, ployz, spawnProgram, startServe } from "./support/daemon.ts";
import { DOCKER_SOCKET, IMAGE, randomSubnet } from "./support/docker.ts";
import { startEngine } from "./support/engine.ts";
import { type RunResult } from "./support/spawn.ts";
import { needs } from "./support/needs.ts";
import { sleep } from "./support/poll.ts";

const RUN = crypto.randomUUID().replaceAll("-", "").slice(0, 8);
/** What `GET /containers/json` lists, as far as these tests read it. */
interface Listed {
  Id: string;
  Names: string[];
  State: string;
  Labels: Record<string, string>;
}

function service(replicas: number): string {
  return [
    "  web:",
    `    image: ${IMAGE}`,
    `    command: ["httpd", "-f", "-p", "80", "-h", "/www"]`,
    `    deploy: {replicas: ${replicas}}`,
    `    stop_grace_period: 1s`,
    `    healthcheck:`,
    `      test: ["CMD", "wget", "-q", "-O-", "http://127.0.0.1/"]`,
    `      interval: 1s`,
    `      timeout: 2s`,
    `      retries: 2`,
  ].join("\n");
}

function noStackTrace(r: RunResult): void {
  ok(!/^\s+at /m.test(r.stderr + r.stdout), `a stack trace was printed:\n${r.stderr}`);
}

Deno.test(needs(["engine"], {
  name: "Docker stopped mid-deploy: the Outcome names the failed step and what never ran; a re-run finishes",
  async fn() {
    await using engine = await startEngine("ployz-faults-engine-");
    const root = await Deno.makeTempDir({ prefix: "ployz-faults-" });
    try {
      const env = await machineEnv(root, {
        dockerSocket: engine.socket,
        dockerRoot: engine.dataRoot,
        network: `ployz-faults-${RUN}`,
        run: RUN,
      });
      await using _serve = await startServe(env);
      let r = await ployz(env, "machine", "init", "--name", "m1", "--subnet", randomSubnet("10.214"));
      equal(r.code, 0, r.stderr);
      const path = join(root, "compose.yaml");
      const project = `flt${RUN}`;
      await Deno.writeTextFile(path, `name: ${project}\nservices:\n${service(3)}\n`);
      const raw = new Docker({ socketPath: engine.socket });
      const names = async () =>
        (await raw.listContainers({ all: true, filters: { label: [`ployz.project=${project}`] } }))
          .map((c: Listed) => c.Names[0]);

      // A 4 s monitor keeps each replica in its health gate long enough to stop Docker under it; --parallel 1 runs
      // the replicas one after the other, so the Outcome is a completed prefix, the failed step and the rest.
      const child = spawnProgram(env, "ployz", "cli", [
        "deploy",
        "-f",
        path,
        "-y",
        "--json",
        "--monitor",
        "4s",
        "--parallel",
        "1",
      ]);
      const output = Promise.all([
        child.status,
        new Response(child.stdout).text(),
        new Response(child.stderr).text(),
      ]);
      const until = Date.now() + 90_000;
      // The second replica running means the first passed its gate and the second is in its own.
      const running = async () =>
        (await raw.listContainers({ filters: { label: [`ployz.project=${project}`] } })).length;
      while (await running() < 2) {
        ok(Date.now() < until, "the deploy never started its second replica");
        await sleep(100);
      }
      // A crash, not a shutdown: a stopping dockerd first stops the containers, and the gate would report
      // their exit (code 137) rather than the engine going away.
      await engine.stop("crash");
      const [status, stdout, stderr] = await output;
      r = { code: status.code, stdout, stderr };
      equal(r.code, 1, r.stdout + r.stderr);
      noStackTrace(r);
      const outcome = outcomeOf(r) as {
        status: string;
        completed: { index: number; slot: string }[];
        failed: { op: { index: number }; error: { code: string; message: string } };
        "not_attempted": { index: number; kind: string }[];
      };
      equal(outcome.status, "partial", JSON.stringify(outcome));
      deepEqual(outcome.completed.map((op) => op.index), [0]);
      equal(outcome.failed.op.index, 1);
      equal(outcome.failed.error.code, "unavailable", JSON.stringify(outcome.failed));
      match(outcome.failed.error.message, /Docker/);
      // The third replica, then the Service's Serving Pointer move.
      deepEqual(outcome.not_attempted.map((op) => `${op.index} ${op.kind}`), ["2 create", "3 point"]);

      const human = await ployz(env, "deploy", "-f", path, "-y", "--dry-run");
      equal(human.code, 1, "the dry run asks a Machine whose Docker is down");
      match(human.stderr, /Docker/);

      await engine.start();
      r = await ployz(env, "deploy", "-f", path, "-y", "--monitor", "1s");
      equal(r.code, 0, r.stdout + r.stderr);
      const after = await raw.listContainers({ filters: { label: [`ployz.project=${project}`] } });
      equal(after.length, 3, JSON.stringify(after.map((c: Listed) => c.Names)));
      equal(new Set(after.map((c: Listed) => c.Labels["ployz.slot"])).size, 3);
      equal((await names()).length, 3, "no container left over from the interrupted run");
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
}));

Deno.test("a Machine without a capability the Deploy needs is refused by name before anything runs", async () => {
  const root = await Deno.makeTempDir({ prefix: "ployz-faults-cap-" });
  const env = await machineEnv(root, {
    dockerSocket: join(root, "absent-docker.sock"),
    dockerRoot: join(root, "docker"),
    network: "unused",
    run: RUN,
  });
  const machine = { id: "01hxmachinexxxxxxxxxxxxxxx", name: "old1", phase: "participating" };
  const calls: string[] = [];
  // A real peer speaking Machine RPC over the socket: an older daemon that only observes.
  const handlers: RpcHandlers = {
    describeContract: () =>
      Promise.resolve({
        "machine_id": machine.id,
        "machine_name": machine.name,
        "protocol_major": PROTOCOL_MAJOR,
        "daemon_version": "0.0.1",
        capabilities: advertisedCapabilities(handlers),
      }),
    status: () =>
      Promise.resolve({ machine, docker: { reachable: true }, "observed_at": new Date().toISOString() }),
    listContainers: () =>
      Promise.resolve({ "machine_id": machine.id, "observed_at": new Date().toISOString(), containers: [] }),
    inspectImage: () => Promise.resolve({ present: true }),
  };
  const app = createRpcApp(handlers);
  const server = await listenUnix({ path: join(env.layout.runDir, "ployz.sock") }, (req, signal) => {
    calls.push(new URL(req.url).pathname);
    return app.fetch(req, signal);
  });
  try {
    const path = join(root, "compose.yaml");
    await Deno.writeTextFile(path, `name: capped\nservices:\n${service(1)}\n`);
    let r = await ployz(env, "deploy", "-f", path, "-y");
    equal(r.code, 1, r.stdout + r.stderr);
    match(
      r.stderr,
      /^error\[unsupported\]: Machine "old1" does not serve "ployz\.container\.ensure\.v1": upgrade its daemon\n$/m,
    );
    noStackTrace(r);
    ok(!calls.some((c) => c.includes("ensure")), `the client asked anyway: ${calls.join(", ")}`);

    r = await ployz(env, "deploy", "-f", path, "-y", "--json");
    equal(r.code, 1);
    const error = JSON.parse(r.stdout.trim().split("\n").at(-1)!).error;
    equal(error.code, "unsupported");
    equal(error.details.capability, "ployz.container.ensure.v1");
    equal(error.details.machine_id, machine.id);

    r = await ployz(env, "deploy", "-f", path, "--dry-run");
    equal(r.code, 0, "a Preview needs only what the Snapshot uses: " + r.stderr);
  } finally {
    await server.shutdown();
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test(needs(["docker"], {
  name: "bad Compose through the real CLI: one readable message naming file, line and key; nothing changes",
  async fn(t) {
    const root = await Deno.makeTempDir({ prefix: "ployz-faults-compose-" });
    const network = `ployz-faults-${RUN}`;
    const raw = new Docker({ socketPath: DOCKER_SOCKET });
    try {
      const env = await machineEnv(root, {
        dockerSocket: DOCKER_SOCKET,
        dockerRoot: root,
        network,
        run: RUN,
      });
      await using _serve = await startServe(env);
      let r = await ployz(env, "machine", "init", "--name", "m1", "--subnet", randomSubnet("10.215"));
      equal(r.code, 0, r.stderr);
      const project = `bad${RUN}`;
      const good = join(root, "good.yaml");
      await Deno.writeTextFile(good, `name: ${project}\nservices:\n${service(1)}\n`);
      r = await ployz(env, "deploy", "-f", good, "-y", "--monitor", "1s");
      equal(r.code, 0, r.stdout + r.stderr);
      // The Project's containers and the Ingress Proxy the Deploy filled (Project ployz-system).
      const seen = async () =>
        (await raw.listContainers({ all: true, filters: { label: [`ployz.test=${RUN}`] } }))
          .map((c: Listed) => `${c.Labels["ployz.project"]} ${c.Id} ${c.State}`).sort();
      const before = await seen();
      deepEqual(before.map((line: string) => line.split(" ")[0]).sort(), [project, "ployz-system"].sort());

      const head = `name: ${project}\nservices:\n${service(2)}\n`;
      const cases: { name: string; text: string; where: RegExp }[] = [
        { name: "syntax", text: `${head}    ports: [\n`, where: /syntax\.yaml:\d+:\d+: Invalid YAML/ },
        {
          name: "unknown",
          text: `${head}    frobnicate: 1\n`,
          where: /unknown\.yaml:13:5: services\.web\.frobnicate: unknown key "frobnicate"/,
        },
        {
          name: "dots",
          text: `${head}  we..b:\n    image: ${IMAGE}\n`,
          where: /dots\.yaml:13:3: services\.we\.\.b: invalid service name "we\.\.b"/,
        },
        {
          name: "project",
          text: head.replace(`name: ${project}`, "name: ../etc"),
          where: /project\.yaml:1:7: name: invalid project name "\.\.\/etc"/,
        },
        {
          name: "port",
          text: `${head}    x-ports: ["99999:80/tcp@host"]\n`,
          where: /port\.yaml:13:15: services\.web\.x-ports\[0\]: invalid port "99999:80\/tcp@host"/,
        },
        {
          name: "types",
          text: head.replace("replicas: 2", "replicas: many"),
          where: /types\.yaml:6:\d+: services\.web\.deploy\.replicas: /,
        },
      ];
      for (const c of cases) {
        await t.step(c.name, async () => {
          const path = join(root, `${c.name}.yaml`);
          await Deno.writeTextFile(path, c.text);
          const r = await ployz(env, "deploy", "-f", path, "-y");
          equal(r.code, 1, r.stdout + r.stderr);
          equal(r.stdout, "");
          const lines = r.stderr.trim().split("\n");
          match(
            lines[0],
            new RegExp(
              `^error\\[invalid_argument\\]: Cannot load compose file ".*${c.name}\\.yaml": 1 problem$`,
            ),
          );
          equal(lines.length, 2, r.stderr);
          match(lines[1], c.where);
          noStackTrace(r);
        });
      }
      deepEqual(await seen(), before, "a refused Compose file changed the Machine");
    } finally {
      for (const c of await raw.listContainers({ all: true, filters: { label: [`ployz.test=${RUN}`] } })) {
        await raw.getContainer(c.Id).remove({ force: true }).catch(() => {});
      }
      for (const n of await raw.listNetworks({ filters: { label: [`ployz.test=${RUN}`] } })) {
        await raw.getNetwork(n.Id).remove().catch(() => {});
      }
      await Deno.remove(root, { recursive: true });
    }
  },
}));
