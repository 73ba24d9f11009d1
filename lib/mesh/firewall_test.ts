import { deepEqual } from "node:assert/strict";
import { ensureContainerForwarding, ensureMeshFirewall } from "./firewall.ts";
import type { CommandResult, CommandRunner } from "./runner.ts";

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
