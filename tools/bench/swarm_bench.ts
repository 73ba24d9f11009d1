// Deploy 1 Service x 3 replicas, then 3 Services x 3, through a real `ployzd serve` against a single-node Swarm's
// `service create --replicas 3` (once per Service, at once) until all the tasks run, both on one throwaway dockerd of
// this run (a Swarm is never initialised on the shared engine). 3 x 3 is also timed with Swarm's services on one
// overlay network, where their tasks find each other by name as a Project's containers do. Needs root, dockerd and
// the dev engine: PLOYZ_DOCKER_SOCKET.
import { join } from "node:path";
import Docker from "dockerode";
import { loadCompose } from "../../lib/deploy/mod.ts";
import { timedDeploy } from "./deploy_once.ts";
import { connectMachine } from "../../lib/rpc/mod.ts";
import { machineEnv, startServe } from "../../tests/support/daemon.ts";
import { IMAGE, randomSubnet } from "../../tests/support/docker.ts";
import { startEngine } from "../../tests/support/engine.ts";
import { lacking } from "../../tests/support/needs.ts";
import { sleep } from "../../lib/util/mod.ts";

const RUN = crypto.randomUUID().replaceAll("-", "").slice(0, 8);
const NETWORK = `ployz-swarm-bench-${RUN}`;

/** Waits until the engine lists no container: the previous round's tasks are gone. */
async function drained(docker: Docker): Promise<void> {
  while ((await docker.listContainers({ all: true })).length > 0) await sleep(100);
}

if (Deno.env.get("PLOYZ_DOCKER_SOCKET") === undefined || lacking("engine") !== undefined) {
  console.log("swarm_bench: needs root, dockerd and PLOYZ_DOCKER_SOCKET (the dev engine); skipping");
} else {
  const engine = await startEngine("ployz-swarm-bench-");
  const init = await engine.docker("swarm", "init", "--advertise-addr", "127.0.0.1");
  if (init.code !== 0) throw new Error(`Cannot init a Swarm on "${engine.socket}": ${init.stderr.trim()}`);
  const root = await Deno.makeTempDir({ prefix: "ployz-swarm-bench-" });
  const env = await machineEnv(root, {
    dockerSocket: engine.socket,
    dockerRoot: engine.dataRoot,
    network: NETWORK,
    run: RUN,
  });
  const serving = await startServe(env);
  const client = connectMachine({ socketPath: join(env.layout.runDir, "ployz.sock") });
  await client.init({ "machine_name": "bench", subnet: randomSubnet("10.216") });
  const docker = new Docker({ socketPath: engine.socket });
  const services = (names: string[]): string =>
    names.map((n) =>
      `  ${n}:\n    image: ${IMAGE}\n    command: ["sleep", "600"]\n    deploy: {replicas: 3}\n    stop_signal: SIGKILL\n`
    ).join("");
  const { project } = loadCompose({
    path: "compose.yaml",
    text: `name: swarm${RUN}\nservices:\n${services(["web"])}`,
    env: {},
  });
  const { project: three } = loadCompose({
    path: "compose.yaml",
    text: `name: swarm3${RUN}\nservices:\n${services(["a", "b", "c"])}`,
    env: {},
  });
  let round = 0;

  globalThis.addEventListener("unload", () => {
    // Synchronous teardown: the bench runner exits right after this event.
    client.close();
    serving.child.kill("SIGTERM");
    engine.disposeSync();
    Deno.removeSync(root, { recursive: true });
  });

  // Swarm attaches a service to no network of its own unless told: its tasks cannot find each other by name. A
  // Project's containers always can (the Machine's network and Internal DNS), so the fair match is an overlay.
  const overlay = await engine.docker("network", "create", "-d", "overlay", `${NETWORK}-overlay`);
  if (overlay.code !== 0) throw new Error(`Cannot create an overlay network: ${overlay.stderr.trim()}`);
  const overlayId = overlay.stdout.trim();

  // Creates `count` Swarm services of 3 replicas at once (on `network` when given) and waits until all their tasks
  // run; then removes them.
  const swarmRound = async (b: Deno.BenchContext, count: number, network?: string): Promise<void> => {
    const names = Array.from({ length: count }, (_, i) => `s${RUN}-${round}-${i}`);
    round++;
    b.start();
    const created = await Promise.all(names.map((name) =>
      docker.createService({
        Name: name,
        TaskTemplate: { ContainerSpec: { Image: IMAGE, Command: ["sleep", "600"], StopSignal: "SIGKILL" } },
        Mode: { Replicated: { Replicas: 3 } },
        ...(network === undefined ? {} : { Networks: [{ Target: network }] }),
      })
    ));
    for (;;) {
      const tasks = await docker.listTasks({ filters: { service: names } });
      if (
        tasks.filter((t: { Status?: { State?: string } }) => t.Status?.State === "running").length >=
          3 * count
      ) {
        break;
      }
      await sleep(20);
    }
    b.end();
    for (const service of created) await docker.getService(service.id).remove();
    await drained(docker);
  };

  Deno.bench({
    name: "Swarm: service create --replicas 3 until 3 tasks run",
    group: "1 Service x 3 vs Swarm",
    baseline: true,
    n: 5,
    warmup: 1,
    async fn(b) {
      await swarmRound(b, 1);
    },
  });

  // Deploys `p` once, timed, then removes what it created.
  const ployzRound = async (b: Deno.BenchContext, p: typeof project): Promise<void> => {
    await timedDeploy(b, client, p, [IMAGE], NETWORK);
    for (const c of await docker.listContainers({ all: true, filters: { label: [`ployz.test=${RUN}`] } })) {
      await docker.getContainer(c.Id).remove({ force: true });
    }
  };

  Deno.bench({
    name: "ployz Deploy through ployzd serve (Snapshot, Plan, execute)",
    group: "1 Service x 3 vs Swarm",
    n: 5,
    warmup: 1,
    async fn(b) {
      await ployzRound(b, project);
    },
  });

  Deno.bench({
    name: "Swarm: 3 x service create --replicas 3 at once until 9 tasks run",
    group: "3 Services x 3 vs Swarm",
    baseline: true,
    n: 5,
    warmup: 1,
    async fn(b) {
      await swarmRound(b, 3);
    },
  });

  Deno.bench({
    name: "Swarm: the same on one overlay network (names resolve, as a Project's do)",
    group: "3 Services x 3 vs Swarm",
    n: 5,
    warmup: 1,
    async fn(b) {
      await swarmRound(b, 3, overlayId);
    },
  });

  Deno.bench({
    name: "ployz Deploy of 3 Services x 3 through ployzd serve (parallel)",
    group: "3 Services x 3 vs Swarm",
    n: 5,
    warmup: 1,
    async fn(b) {
      await ployzRound(b, three);
    },
  });
}
