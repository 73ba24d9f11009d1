import { deepEqual, equal } from "node:assert/strict";
import { LinkHealth } from "./cluster_link_health.ts";

Deno.test("LinkHealth logs a failure once, again when it changes, and once when the part works again", () => {
  const lines: string[] = [];
  const health = new LinkHealth((line) => lines.push(line));
  health.ok("firewall");
  health.fail("firewall", new Error("iptables: exit 4"));
  health.fail("firewall", new Error("iptables: exit 4"));
  health.fail("listener", "address in use");
  equal(health.error("firewall"), "iptables: exit 4");
  equal(health.summary(), "firewall: iptables: exit 4; listener: address in use");
  health.fail("firewall", new Error("iptables: exit 1"));
  health.ok("firewall");
  health.ok("firewall");
  health.ok("listener");
  equal(health.summary(), undefined);
  deepEqual(lines, [
    "mesh: firewall: iptables: exit 4",
    "mesh: listener: address in use",
    "mesh: firewall: iptables: exit 1",
    "mesh: firewall: working again",
    "mesh: listener: working again",
  ]);
});
