// Deploy 1 Service x 3 replicas through the real daemon (Snapshot, Plan, execute over Machine RPC) against the raw
// Docker API creating and starting the same three containers. Needs a running dockerd: PLOYZ_DOCKER_SOCKET.
import { join } from "node:path";
import Docker from "dockerode";
import {
  deployIntent,
  executePlan,
  newDeploymentId,
  type NormalizedProject,
  planDeploy,
  takeSnapshot,
} from "../../lib/deploy/mod.ts";
import { permissionFlags, permissionSet, relocate } from "../../lib/permissions/mod.ts";
import { connectMachine, type MachineClient } from "../../lib/rpc/mod.ts";
import { sleep } from "../../lib/util/mod.ts";

const SOCKET = Deno.env.get("PLOYZ_DOCKER_SOCKET");
const IMAGE = "ployz-test/busybox:1";
const RUN = crypto.randomUUID().replaceAll("-", "").slice(0, 8);
const NETWORK = `ployz-bench-${RUN}`;
const LABEL = `ployz.bench=${RUN}`;

function project(): NormalizedProject {
  const web = {
    name: "web",
    image: IMAGE,
    mode: "replicated" as const,
    replicas: 3,
    command: ["sleep", "600"],
    entrypoint: null,
    environment: {},
    labels: {},
    ports: [],
    mounts: [],
    healthcheck: { kind: "disabled" as const },
    restart: "no",
    user: null,
    workingDir: null,
    hostname: null,
    extraHosts: [],
    capAdd: [],
    capDrop: [],
    privileged: false,
    init: null,
    tty: false,
    stdinOpen: false,
    sysctls: {},
    stopGracePeriodMs: 1000,
    stopSignal: "SIGKILL",
    pullPolicy: "missing" as const,
    logging: { driver: "local", options: {} },
    resources: {
      nanoCpus: null,
      memoryBytes: null,
      memoryReservationBytes: null,
      shmSizeBytes: null,
      ulimits: {},
    },
    dependsOn: [],
    profiles: [],
    update: { order: null, monitorMs: null },
    machines: [],
    caddy: null,
    preDeploy: null,
  };
  return { name: `bench${RUN}`, context: null, services: { web }, volumes: {} };
}

async function startDaemon(
  socket: string,
): Promise<{ child: Deno.ChildProcess; client: MachineClient; root: string }> {
  const root = await Deno.makeTempDir({ prefix: "ployz-bench-" });
  const layout = {
    dataDir: join(root, "data"),
    runDir: join(root, "run"),
    dockerSocket: socket,
    dockerRoot: root,
  };
  await Deno.mkdir(layout.runDir, { recursive: true });
  const entry = new URL("../../cmd/ployzd.ts", import.meta.url).pathname;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", ...permissionFlags(relocate(permissionSet("serve"), layout)), entry, "serve"],
    env: {
      PLOYZ_DATA_DIR: layout.dataDir,
      PLOYZ_RUN_DIR: layout.runDir,
      PLOYZ_DOCKER_SOCKET: socket,
      PLOYZ_DOCKER_NETWORK: NETWORK,
      PLOYZ_DOCKER_LABELS: LABEL,
    },
    clearEnv: true,
    stdout: "null",
    stderr: "null",
  }).spawn();
  const client = connectMachine({ socketPath: join(layout.runDir, "ployz.sock") });
  for (let i = 0;; i++) {
    try {
      await client.describeContract();
      break;
    } catch (error) {
      if (i > 300) throw error;
      await sleep(100);
    }
  }
  await client.init({
    "machine_name": "bench",
    subnet: `10.213.${1 + Math.floor(Math.random() * 254)}.0/24`,
  });
  return { child, client, root };
}

async function removeByLabel(docker: Docker, label: string): Promise<void> {
  for (const c of await docker.listContainers({ all: true, filters: { label: [label] } })) {
    await docker.getContainer(c.Id).remove({ force: true });
  }
}

if (SOCKET === undefined) {
  console.log("deploy_bench: PLOYZ_DOCKER_SOCKET is unset; skipping (it needs a running dockerd)");
} else {
  const docker = new Docker({ socketPath: SOCKET });
  const daemon = await startDaemon(SOCKET);
  const p = project();
  const rawLabel = `ployz.bench.raw=${RUN}`;
  globalThis.addEventListener("unload", () => {
    daemon.client.close();
    daemon.child.kill("SIGTERM");
    Deno.removeSync(daemon.root, { recursive: true });
    // The daemon's network outlives it, bridge and iptables rules included.
    new Deno.Command("docker", {
      args: ["-H", `unix://${SOCKET}`, "network", "rm", NETWORK],
      stdout: "null",
      stderr: "null",
    }).outputSync();
  });

  Deno.bench({
    name: "raw Docker API: create and start 3 containers",
    group: "deploy 1 Service x 3",
    baseline: true,
    n: 5,
    warmup: 1,
    async fn(b) {
      b.start();
      for (let slot = 1; slot <= 3; slot++) {
        const c = await docker.createContainer({
          Image: IMAGE,
          Cmd: ["sleep", "600"],
          Labels: { "ployz.bench.raw": RUN, "ployz.bench": RUN },
          HostConfig: { NetworkMode: NETWORK },
        });
        await c.start();
      }
      b.end();
      await removeByLabel(docker, rawLabel);
    },
  });

  Deno.bench({
    name: "ployz Deploy through ployzd serve (Snapshot, Plan, execute)",
    group: "deploy 1 Service x 3",
    n: 5,
    warmup: 1,
    async fn(b) {
      const machines = [{ id: "", name: "bench", api: daemon.client }];
      b.start();
      const snapshot = await takeSnapshot(machines, { project: p.name, images: [IMAGE] });
      const plan = planDeploy({
        intent: deployIntent(p, newDeploymentId()),
        snapshot,
        skipHealth: true,
        network: NETWORK,
      });
      const outcome = await executePlan(plan, new Map([[snapshot.machines[0].machineId, daemon.client]]));
      b.end();
      if (outcome.status !== "succeeded") {
        throw new Error(`Deploy ${outcome.status}: ${outcome.failed?.error.message}`);
      }
      await removeByLabel(docker, LABEL);
    },
  });
}
