// The Cluster link serves the mesh port only while its firewall rules are in place: with iptables failing, no
// listener; once the rules go in, the listener opens on the next tick; when they can no longer be put back, the
// listener closes on the next tick. The commands are a stand-in (this is the link's own logic); the listener is a
// real one, on a loopback address standing in for the Machine Gateway.
import assert from "node:assert/strict";
import type { CommandResult, CommandRunner } from "../mesh/mod.ts";
import { DEFAULT_CLUSTER_NETWORK, DEFAULT_MEMBERSHIP_THRESHOLDS } from "../mesh/mod.ts";
import { openStore } from "../store/mod.ts";
import { ClusterLink } from "./cluster_link.ts";
import { SYNC_PORT } from "./mesh_settings.ts";

const GATEWAY = "127.77.0.1";

async function listening(): Promise<boolean> {
  try {
    const conn = await Deno.connect({ hostname: GATEWAY, port: SYNC_PORT });
    conn.close();
    return true;
  } catch {
    return false;
  }
}

async function until(what: string, ms: number, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < ms) {
    if (await check()) return Date.now() - started;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`Timed out after ${ms} ms waiting for ${what}`);
}

Deno.test("the mesh listener runs only while the firewall guards it, checked on every tick", async () => {
  const state = { iptablesFails: true, iptablesCalls: 0 };
  const runner: CommandRunner = {
    where: "test",
    run(cmd: string, args: string[]): Promise<CommandResult> {
      if (cmd === "iptables" || cmd === "ip6tables") {
        state.iptablesCalls++;
        if (state.iptablesFails) {
          return Promise.resolve({ code: 4, stdout: "", stderr: "iptables: stand-in failure" });
        }
        // No rule to check or delete: the chains list empty, so every pass rebuilds them.
        if (args.includes("-C") || args.includes("-D")) {
          return Promise.resolve({ code: 1, stdout: "", stderr: "" });
        }
      }
      return Promise.resolve({ code: 0, stdout: "", stderr: "" });
    },
  };
  const store = openStore({ path: ":memory:", siteId: "m-self", clusterId: "c-test" });
  const lines: string[] = [];
  const tickMs = 100;
  const link = new ClusterLink({
    store,
    settings: {
      interfaceName: "wgtest0",
      listenPort: 51820,
      clusterNetwork: DEFAULT_CLUSTER_NETWORK,
      thresholds: DEFAULT_MEMBERSHIP_THRESHOLDS,
      tickMs,
      antiEntropyMs: 60_000,
      runner,
    },
    keyPath: "/nonexistent/key",
    selfId: "m-self",
    subnet: "127.77.0.0/24",
    log: (line) => lines.push(line),
  });
  try {
    link.start();
    await until("a failed firewall attempt", 2_000, () => Promise.resolve(state.iptablesCalls > 0));
    await new Promise((r) => setTimeout(r, 3 * tickMs));
    assert.equal(await listening(), false, "a listener without its firewall rules");
    assert.match(link.meshError ?? "", /firewall: .*stand-in failure/);

    state.iptablesFails = false;
    const opened = await until("the listener once the rules are in", 2_000, listening);
    assert.ok(opened <= 2 * tickMs + 200, `opened after ${opened} ms, tick ${tickMs} ms`);
    assert.equal(link.meshError, undefined);

    state.iptablesFails = true;
    const closed = await until("the listener closed", 2_000, async () => !(await listening()));
    assert.ok(closed <= 2 * tickMs + 200, `closed after ${closed} ms, tick ${tickMs} ms`);
    assert.ok(
      lines.some((l) => l.includes(`listener closed: the firewall does not guard port ${SYNC_PORT}`)),
    );
  } finally {
    await link.stop();
    store.close();
  }
});
