import { deepEqual, equal } from "node:assert/strict";
import {
  ensureContainerForwarding,
  ensureMeshFirewall,
  parseTableListing,
  readFirewall,
} from "./firewall.ts";
import type { CommandResult, CommandRunner } from "./runner.ts";
import { firewallStandIn } from "./firewall_stand_in.ts";

// Records the rules appended to each chain; every chain starts missing, so each pass writes it whole.
function recorder(): { runner: CommandRunner; appended: Map<string, string[]> } {
  const appended = new Map<string, string[]>();
  const runner: CommandRunner = {
    where: "test",
    run(cmd: string, args: string[]): Promise<CommandResult> {
      const listing = args.includes("-S") || args.includes("-C") || args.includes("-D");
      const at = args.indexOf("-A");
      if (at >= 0) {
        const key = `${cmd} ${args[at + 1]}`;
        appended.set(key, [...(appended.get(key) ?? []), args.slice(at + 2).join(" ")]);
      }
      return Promise.resolve({ code: listing ? 1 : 0, stdout: "", stderr: "" });
    },
  };
  return { runner, appended };
}

Deno.test("a quarantined peer reaches the mesh port and nothing else: IPv4 INPUT and FORWARD", async () => {
  const { runner, appended } = recorder();
  await ensureMeshFirewall(runner, { interfaceName: "wg0", ports: [51000], quarantined: ["10.210.3.1/32"] });
  await ensureContainerForwarding(runner, {
    interfaceName: "wg0",
    subnet: "10.210.1.0/24",
    clusterNetwork: "10.210.0.0/16",
    quarantined: ["10.210.3.1/32"],
  });
  deepEqual(appended.get("iptables PLOYZ-INPUT"), [
    "-s 10.210.3.1/32 -i wg0 -p tcp -m tcp --dport 51000 -j ACCEPT",
    "-s 10.210.3.1/32 -i wg0 -j DROP",
    "-i wg0 -p tcp -m tcp --dport 51000 -j ACCEPT",
    "-p tcp -m tcp --dport 51000 -j DROP",
  ]);
  // It is allowed no IPv6 address at all, so the IPv6 chain is unchanged.
  deepEqual(appended.get("ip6tables PLOYZ-INPUT"), [
    "-i wg0 -p tcp -m tcp --dport 51000 -j ACCEPT",
    "-p tcp -m tcp --dport 51000 -j DROP",
  ]);
  deepEqual(appended.get("iptables PLOYZ-FORWARD"), [
    "-s 10.210.3.1/32 -j DROP",
    "-d 10.210.3.1/32 -j DROP",
    "-s 10.210.0.0/16 -d 10.210.1.0/24 -i wg0 -j ACCEPT",
    "-s 10.210.1.0/24 -d 10.210.0.0/16 -o wg0 -j ACCEPT",
  ]);
});

Deno.test("an intact firewall costs one read per table and no write; a flushed INPUT is put back", async () => {
  const { runner, counts, chains } = firewallStandIn();
  const mesh = { interfaceName: "wg0", ports: [51000] };
  const forwarding = { interfaceName: "wg0", subnet: "10.210.1.0/24", clusterNetwork: "10.210.0.0/16" };
  const check = async (): Promise<string[]> => {
    const snapshot = await readFirewall(runner);
    return [
      ...await ensureMeshFirewall(runner, mesh, snapshot),
      ...await ensureContainerForwarding(runner, forwarding, snapshot),
    ];
  };
  deepEqual(await check(), [
    "PLOYZ-INPUT (IPv4)",
    "INPUT jump (IPv4)",
    "PLOYZ-INPUT (IPv6)",
    "INPUT jump (IPv6)",
    "PLOYZ-FORWARD",
    "DOCKER-USER jump",
    "PLOYZ-POSTROUTING",
    "POSTROUTING jump",
  ]);
  counts.reads = 0;
  counts.writes = 0;
  deepEqual(await check(), []);
  deepEqual(counts, { reads: 3, writes: 0 });

  // A firewall reload flushed INPUT (IPv4): the next check puts back only the jump.
  chains.get("iptables filter INPUT")!.length = 0;
  deepEqual(await check(), ["INPUT jump (IPv4)"]);
  deepEqual(chains.get("iptables filter INPUT"), ["-A INPUT -j PLOYZ-INPUT"]);
  // Something put ahead of the nat jump: it is moved back to the top.
  chains.get("iptables nat POSTROUTING")!.unshift("-A POSTROUTING -j MASQUERADE");
  deepEqual(await check(), ["POSTROUTING jump"]);
  deepEqual(chains.get("iptables nat POSTROUTING"), [
    "-A POSTROUTING -j PLOYZ-POSTROUTING",
    "-A POSTROUTING -j MASQUERADE",
  ]);
  // The same checks without a snapshot (each chain read on its own) find everything in place too.
  counts.reads = 0;
  deepEqual([
    ...await ensureMeshFirewall(runner, mesh),
    ...await ensureContainerForwarding(runner, forwarding),
  ], []);
  equal(counts.reads, 9);
});

Deno.test("a table listing splits into chains, built-in and user, with their rules", () => {
  const chains = parseTableListing(
    "-P INPUT ACCEPT\n-N PLOYZ-INPUT\n-A INPUT -j PLOYZ-INPUT\n-A PLOYZ-INPUT -i wg0 -j ACCEPT\n\n",
  );
  deepEqual([...chains], [["INPUT", ["-A INPUT -j PLOYZ-INPUT"]], ["PLOYZ-INPUT", [
    "-A PLOYZ-INPUT -i wg0 -j ACCEPT",
  ]]]);
});
