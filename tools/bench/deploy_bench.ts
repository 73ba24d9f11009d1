// Deploy 1 Service x 3 replicas through the real daemon (Snapshot, Plan, execute over Machine RPC) against the raw
// Docker API creating and starting the same three containers. Needs a running dockerd: PLOYZ_DOCKER_SOCKET.
import { join } from "node:path";
import Docker from "dockerode";
import { loadCompose, type NormalizedProject } from "../../lib/deploy/mod.ts";
import { timedDeploy } from "./deploy_once.ts";
import { connectMachine, type MachineClient } from "../../lib/rpc/mod.ts";
import { machineEnv, type Serving, startServe } from "../../tests/support/daemon.ts";

const SOCKET = Deno.env.get("PLOYZ_DOCKER_SOCKET");
const IMAGE = "ployz-test/busybox:1";
const RUN = crypto.randomUUID().replaceAll("-", "").slice(0, 8);
const NETWORK = `ployz-bench-${RUN}`;
const LABEL = `ployz.test=${RUN}`;

/** The Service every run deploys, read by the real Compose loader. */
function project(): NormalizedProject {
  const text = [
    `name: bench${RUN}`,
    "services:",
    "  web:",
    `    image: ${IMAGE}`,
    '    command: ["sleep", "600"]',
    "    deploy: {replicas: 3}",
    "    healthcheck: {disable: true}",
    "    stop_grace_period: 1s",
    "    stop_signal: SIGKILL",
    "",
  ].join("\n");
  return loadCompose({ path: "bench.yaml", text, env: {} }).project;
}

/** `ployzd serve` on the engine at `socket`, initialized as the one Machine of a Cluster. */
async function startDaemon(
  socket: string,
): Promise<{ serving: Serving; client: MachineClient; root: string }> {
  const root = await Deno.makeTempDir({ prefix: "ployz-bench-" });
  const env = await machineEnv(root, { dockerSocket: socket, dockerRoot: root, network: NETWORK, run: RUN });
  const serving = await startServe(env);
  const client = connectMachine({ socketPath: join(env.layout.runDir, "ployz.sock") });
  await client.init({
    "machine_name": "bench",
    subnet: `10.213.${1 + Math.floor(Math.random() * 254)}.0/24`,
  });
  return { serving, client, root };
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
    daemon.serving.child.kill("SIGTERM");
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
      await timedDeploy(b, daemon.client, p, [IMAGE], NETWORK);
      await removeByLabel(docker, LABEL);
    },
  });
}
