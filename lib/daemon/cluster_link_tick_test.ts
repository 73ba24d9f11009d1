// What one mesh tick costs once everything is in place: one listing of each firewall table it checks and one read
// of the WireGuard interface, and no write; a firewall reload is still put back on the next tick. iptables is an
// in-memory stand-in (lib/mesh's), the other commands answer as an interface with no peers would; the listener is a
// real one on a loopback address standing in for the Machine Gateway.
import assert from "node:assert/strict";
import type { CommandResult, CommandRunner } from "../mesh/mod.ts";
import { DEFAULT_CLUSTER_NETWORK, DEFAULT_MEMBERSHIP_THRESHOLDS, firewallStandIn } from "../mesh/mod.ts";
import { openStore } from "../store/mod.ts";
import { ClusterLink } from "./cluster_link.ts";
import { pollUntil } from "../util/mod.ts";

Deno.test("a tick that finds the mesh in place reads each firewall table and the interface once, and writes nothing", async () => {
  const firewall = firewallStandIn();
  const commands: string[] = [];
  const runner: CommandRunner = {
    where: "test",
    run(cmd: string, args: string[]): Promise<CommandResult> {
      commands.push([cmd, ...args.filter((a) => a !== "-w")].join(" "));
      if (cmd === "iptables" || cmd === "ip6tables") return firewall.runner.run(cmd, args);
      const stdout = cmd === "wg" && args[0] === "show"
        ? "private\tpublic\t51820\toff\n"
        : cmd === "ip" && args.includes("route")
        ? "[]"
        : "";
      return Promise.resolve({ code: 0, stdout, stderr: "" });
    },
  };
  const store = openStore({ path: ":memory:", siteId: "m-self", clusterId: "c-test" });
  const link = new ClusterLink({
    store,
    settings: {
      interfaceName: "wgtick0",
      listenPort: 51820,
      clusterNetwork: DEFAULT_CLUSTER_NETWORK,
      thresholds: DEFAULT_MEMBERSHIP_THRESHOLDS,
      tickMs: 40,
      antiEntropyMs: 60_000,
      runner,
    },
    keyPath: "/nonexistent/key",
    selfId: "m-self",
    subnet: "127.78.0.0/24",
    log: () => {},
  });
  const reads = (): number => commands.filter((c) => c.startsWith("wg show")).length;
  try {
    link.start();
    assert.ok(await pollUntil(() => reads() >= 2, { timeoutMs: 5_000, intervalMs: 10 }), "the first ticks");
    assert.equal(link.meshError, undefined);
    const writes = firewall.counts.writes;
    commands.length = 0;
    assert.ok(await pollUntil(() => reads() >= 4, { timeoutMs: 5_000, intervalMs: 10 }), "four more ticks");
    // Three whole ticks after the reset, the first of which may have been half-way through it.
    const from = commands.indexOf("iptables -t filter -S");
    assert.deepEqual(
      commands.slice(from, from + 12),
      Array(3).fill([
        "iptables -t filter -S",
        "iptables -t nat -S",
        "ip6tables -t filter -S",
        "wg show wgtick0 dump",
      ]).flat(),
    );
    assert.equal(firewall.counts.writes, writes, "a tick that finds everything in place writes nothing");

    // A firewall reload flushed INPUT on both families: the next tick puts the jumps back.
    firewall.chains.get("iptables filter INPUT")!.length = 0;
    firewall.chains.get("ip6tables filter INPUT")!.length = 0;
    const jumpsBack = () =>
      firewall.chains.get("iptables filter INPUT")!.includes("-A INPUT -j PLOYZ-INPUT") &&
      firewall.chains.get("ip6tables filter INPUT")!.includes("-A INPUT -j PLOYZ-INPUT");
    assert.ok(await pollUntil(jumpsBack, { timeoutMs: 5_000, intervalMs: 10 }), "the INPUT jumps back");
  } finally {
    await link.stop();
    store.close();
  }
});
