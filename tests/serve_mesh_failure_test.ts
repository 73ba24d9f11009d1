// `ployzd serve` keeps serving when its mesh cannot come up: the real daemon under its relocated `serve` set and
// the real dockerd, with a WireGuard interface name that cannot be created. Machine RPC still answers, init still
// founds the Cluster, and `ployz.machine.list.v1` reports the mesh failure instead of the daemon crashing.
import { equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import Docker from "dockerode";
import { permissionFlags, permissionSet, relocate } from "../lib/permissions/mod.ts";
import { CAPABILITIES, connectMachine } from "../lib/rpc/mod.ts";
import { ROOT } from "./harness.ts";

const SOCKET = Deno.env.get("PLOYZ_DOCKER_SOCKET") ?? "/var/run/docker.sock";
const RUN = crypto.randomUUID().slice(0, 8);

function dockerPresent(): boolean {
  try {
    return Deno.statSync(SOCKET).isSocket === true;
  } catch {
    return false;
  }
}

Deno.test({
  name: "ployzd serve keeps answering when WireGuard cannot come up, and says why in machine ls",
  ignore: !dockerPresent() && Deno.env.get("CI") === undefined,
  async fn() {
    if (!dockerPresent()) throw new Error(`Docker socket "${SOCKET}" is absent and CI is set`);
    const root = await Deno.makeTempDir({ prefix: "ployz-meshfail-" });
    const layout = {
      dataDir: join(root, "data"),
      runDir: join(root, "run"),
      dockerSocket: SOCKET,
      dockerRoot: root,
    };
    await Deno.mkdir(layout.runDir, { recursive: true });
    const network = `ployz-meshfail-${RUN}`;
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-prompt",
        "--quiet",
        ...permissionFlags(relocate(permissionSet("serve"), layout)),
        join(ROOT, "cmd", "ployzd.ts"),
        "serve",
      ],
      cwd: ROOT,
      clearEnv: true,
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        RUST_BACKTRACE: "0",
        PLOYZ_DATA_DIR: layout.dataDir,
        PLOYZ_RUN_DIR: layout.runDir,
        PLOYZ_DOCKER_SOCKET: SOCKET,
        PLOYZ_DOCKER_ROOT: root,
        PLOYZ_DOCKER_NETWORK: network,
        PLOYZ_DOCKER_LABELS: `ployz.test=${RUN}`,
        // Not a possible interface name: the mesh fails before touching the host.
        PLOYZ_WG_INTERFACE: "no such/interface",
        PLOYZ_ADVERTISE_ENDPOINTS: "192.0.2.99:51820",
        PLOYZ_MESH_TICK_MS: "200",
      },
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const stderr = new Response(child.stderr).text();
    const client = connectMachine({ socketPath: join(layout.runDir, "ployz.sock") });
    const raw = new Docker({ socketPath: SOCKET });
    try {
      const until = Date.now() + 60_000;
      for (;;) {
        try {
          await client.describeContract();
          break;
        } catch (error) {
          if (Date.now() > until) throw error;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
      await client.requireCapability(CAPABILITIES.listMachines);
      const octet = 1 + Math.floor(Math.random() * 254);
      const { machine } = await client.init({ "cluster_name": "meshfail", subnet: `10.213.${octet}.0/24` });
      equal(machine.phase, "participating");
      await new Promise((r) => setTimeout(r, 1_000)); // several ticks retry the interface
      const list = await client.listMachines();
      equal(list.machines.length, 1);
      equal(list.machines[0].self, true);
      equal(list.machines[0].endpoints[0], "192.0.2.99:51820");
      match(list.mesh_error ?? "", /interface: Cannot use interface name "no such\/interface"/);
      equal((await client.status()).machine.phase, "participating");
    } finally {
      client.close();
      child.kill("SIGTERM");
      const status = await child.status;
      const log = await stderr;
      ok(status.code === 0, `serve exited ${status.code}: ${log}`);
      // Reported once, not once per retry.
      equal(log.split("\n").filter((l) => l.includes("Cannot use interface name")).length, 1, log);
      for (const n of await raw.listNetworks({ filters: { label: [`ployz.test=${RUN}`] } })) {
        await raw.getNetwork(n.Id).remove().catch(() => {});
      }
      await Deno.remove(root, { recursive: true });
    }
  },
});
