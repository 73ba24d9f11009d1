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
import { pollUntil, sleep } from "../util/mod.ts";

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

/** Polls `check` every 20 ms for at most `ms`; fails naming `what` when it never holds, else how long it took. */
async function until(what: string, ms: number, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  assert.ok(
    await pollUntil(check, { timeoutMs: ms, intervalMs: 20 }),
    `Timed out after ${ms} ms waiting for ${what}`,
  );
  return Date.now() - started;
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
    await sleep(3 * tickMs);
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

Deno.test("a retired Machine is a quarantined peer: its gateway only, no keepalive, firewalled first, never synced with", async () => {
  const KEY3 = "YBNsOQgGV8gWsLtnUQNNsRzW4aFGFKCHBVTkcXB9BnM=";
  const KEY2 = "gN65BkIKy1eCE9pP1wdc8ROUtkHLF2PfAqYdeEdbmXo=";
  const calls: string[] = [];
  const runner: CommandRunner = {
    where: "test",
    run(cmd: string, args: string[]): Promise<CommandResult> {
      calls.push(`${cmd} ${args.join(" ")}`);
      const listing = (cmd === "iptables" || cmd === "ip6tables") &&
        (args.includes("-S") || args.includes("-C") || args.includes("-D"));
      return Promise.resolve({ code: listing ? 1 : 0, stdout: "", stderr: "" });
    },
  };
  const store = openStore({ path: ":memory:", siteId: "m-self", clusterId: "c-test" });
  store.machines.put({
    id: "m-self",
    name: "m1",
    subnet: "127.77.0.0/24",
    "public_key": KEY2.replace("g", "h"),
  });
  const settings = {
    interfaceName: "wgtest1",
    listenPort: 51820,
    clusterNetwork: DEFAULT_CLUSTER_NETWORK,
    thresholds: DEFAULT_MEMBERSHIP_THRESHOLDS,
    tickMs: 60_000,
    antiEntropyMs: 60_000,
    runner,
  };
  const options = {
    store,
    settings,
    keyPath: "/nonexistent/key",
    selfId: "m-self",
    subnet: "127.77.0.0/24",
    log: () => {},
  };
  const link = new ClusterLink(options);
  try {
    link.start();
    // m2 is live; m3 was retired while gone.
    await until(
      "the first peer set",
      2_000,
      () => Promise.resolve(calls.some((c) => c.startsWith("wg set"))),
    );
    calls.length = 0;
    const other = openStore({ path: ":memory:", siteId: "m2", clusterId: "c-test" });
    const third = openStore({ path: ":memory:", siteId: "m3", clusterId: "c-test" });
    try {
      store.applyChanges([
        other.machines.put({ id: "m2", name: "m2", subnet: "127.77.2.0/24", "public_key": KEY2 }),
      ]);
      store.applyChanges([
        third.machines.put({ id: "m3", name: "m3", subnet: "127.77.3.0/24", "public_key": KEY3 }),
      ]);
    } finally {
      other.close();
      third.close();
    }
    store.retiredMachines.put({ "machine_id": "m3", name: "m3", "retired_by": "m-self" });
    await until(
      "m3 quarantined",
      2_000,
      () => Promise.resolve(calls.some((c) => c.startsWith("wg set") && c.includes(`peer ${KEY3}`))),
    );
    const set = calls.findLast((c) => c.startsWith("wg set"))!;
    assert.match(
      set,
      new RegExp(
        `peer ${KEY3.replaceAll("+", "\\+")} persistent-keepalive 0 allowed-ips 127\\.77\\.3\\.1/32`,
      ),
    );
    assert.ok(!set.includes(`peer ${KEY3} endpoint`), "never an endpoint: it only answers");
    const firewall = calls.findIndex((c) => c.includes("-A PLOYZ-INPUT -s 127.77.3.1/32"));
    assert.ok(firewall >= 0 && firewall < calls.indexOf(set), "the firewall holds it before it is a peer");
    assert.ok(calls.some((c) => c.includes("-A PLOYZ-FORWARD -s 127.77.3.1/32 -j DROP")));
    // Containers forward within this Cluster's network, the /16 around its subnet, not the configured default.
    assert.ok(
      calls.some((c) =>
        c.includes("-A PLOYZ-FORWARD -s 127.77.0.0/16 -d 127.77.0.0/24 -i wgtest1 -j ACCEPT")
      ),
    );
    assert.ok(calls.some((c) => c.includes("-s 127.77.0.0/24 ! -d 127.77.0.0/16 -j MASQUERADE")));
    assert.ok(calls.some((c) => c.includes("route replace 127.77.3.1/32 dev wgtest1")));
    assert.deepEqual(link.peerUrls().map((p) => p.machineId), ["m2"], "synced with the live peer only");
  } finally {
    await link.stop();
  }
  const removed = new ClusterLink({ ...options, removed: true });
  assert.equal(removed.removed, true);
  assert.deepEqual(removed.peerUrls(), [], "a Machine its Cluster retired syncs with no one");
  store.close();
});
