// `ployzd serve` keeps serving when its mesh cannot come up: the real daemon under its relocated `serve` set and
// the real dockerd, with a WireGuard interface name that cannot be created. Machine RPC still answers, init still
// founds the Cluster, and `ployz.machine.list.v1` reports the mesh failure instead of the daemon crashing.
import { equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import Docker from "dockerode";
import { CAPABILITIES, connectMachine } from "../lib/rpc/mod.ts";
import { machineEnv, startServe } from "./support/daemon.ts";
import { DOCKER_SOCKET, removeByLabel } from "./support/docker.ts";
import { needs } from "./support/needs.ts";
import { sleep } from "./support/poll.ts";

const RUN = crypto.randomUUID().slice(0, 8);

Deno.test(needs(["docker"], {
  name: "ployzd serve keeps answering when WireGuard cannot come up, and says why in machine ls",
  async fn() {
    const root = await Deno.makeTempDir({ prefix: "ployz-meshfail-" });
    const env = await machineEnv(root, {
      dockerSocket: DOCKER_SOCKET,
      dockerRoot: root,
      network: `ployz-meshfail-${RUN}`,
      run: RUN,
    });
    env.vars = {
      ...env.vars,
      // Not a possible interface name: the mesh fails before touching the host.
      PLOYZ_WG_INTERFACE: "no such/interface",
      PLOYZ_ADVERTISE_ENDPOINTS: "192.0.2.99:51820",
      PLOYZ_MESH_TICK_MS: "200",
    };
    const serving = await startServe(env);
    const client = connectMachine({ socketPath: join(env.layout.runDir, "ployz.sock") });
    const raw = new Docker({ socketPath: DOCKER_SOCKET });
    try {
      await client.requireCapability(CAPABILITIES.listMachines);
      const octet = 1 + Math.floor(Math.random() * 254);
      const { machine } = await client.init({ "cluster_name": "meshfail", subnet: `10.213.${octet}.0/24` });
      equal(machine.phase, "participating");
      await sleep(1_000); // several ticks retry the interface
      const list = await client.listMachines();
      equal(list.machines.length, 1);
      equal(list.machines[0].self, true);
      equal(list.machines[0].endpoints[0], "192.0.2.99:51820");
      match(list.mesh_error ?? "", /interface: Cannot use interface name "no such\/interface"/);
      equal((await client.status()).machine.phase, "participating");
    } finally {
      client.close();
      const { code, stderr: log } = await serving.stop();
      ok(code === 0, `serve exited ${code}: ${log}`);
      // Reported once, not once per retry.
      equal(log.split("\n").filter((l) => l.includes("Cannot use interface name")).length, 1, log);
      await removeByLabel(raw, `ployz.test=${RUN}`);
      await Deno.remove(root, { recursive: true });
    }
  },
}));
