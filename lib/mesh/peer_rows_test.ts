import { deepEqual, equal } from "node:assert/strict";
import { quarantinedPeers, usablePeers } from "./peer_rows.ts";

const KEY_A = "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo=";
const KEY_B = "gN65BkIKy1eCE9pP1wdc8ROUtkHLF2PfAqYdeEdbmXo=";
const KEY_C = "YBNsOQgGV8gWsLtnUQNNsRzW4aFGFKCHBVTkcXB9BnM=";
const OPTIONS = { selfId: "self", ownSubnet: "10.210.0.0/24", clusterNetwork: "10.210.0.0/16" };

Deno.test("usablePeers keeps good rows and skips each kind of unusable one with a reason", () => {
  const verdict = usablePeers([
    { machineId: "self", publicKey: KEY_A, subnet: "10.210.0.0/24" },
    {
      machineId: "good",
      publicKey: KEY_A,
      subnet: "10.210.1.0/24",
      endpoints: ["192.0.2.1:51820", "junk", 7],
    },
    { machineId: "no-key", subnet: "10.210.2.0/24" },
    { machineId: "bad-key", publicKey: "not a key", subnet: "10.210.2.0/24" },
    { machineId: "bad-subnet", publicKey: KEY_B, subnet: "x" },
    { machineId: "wide", publicKey: KEY_B, subnet: "10.210.0.0/16" },
    { machineId: "outside", publicKey: KEY_B, subnet: "10.99.1.0/24" },
    { machineId: "mine", publicKey: KEY_B, subnet: "10.210.0.0/24" },
    { machineId: "no-subnet", publicKey: KEY_B },
    { machineId: "same-key", publicKey: KEY_A, subnet: "10.210.3.0/24" },
    { machineId: "clash-1", publicKey: KEY_B, subnet: "10.210.4.0/24" },
    { machineId: "clash-2", publicKey: KEY_C, subnet: "10.210.4.0/24" },
  ], OPTIONS);
  deepEqual(verdict.peers, [
    { machineId: "good", publicKey: KEY_A, subnet: "10.210.1.0/24", endpoints: ["192.0.2.1:51820"] },
  ]);
  deepEqual(Object.fromEntries(verdict.skipped.map((s) => [s.machineId, s.reason])), {
    "no-key": "its WireGuard key is missing or not a base64 32-byte key",
    "bad-key": "its WireGuard key is missing or not a base64 32-byte key",
    "bad-subnet": 'its subnet "x" is not an IPv4 /24',
    wide: 'its subnet "10.210.0.0/16" is not an IPv4 /24',
    outside: "its subnet 10.99.1.0/24 lies outside the Cluster network 10.210.0.0/16",
    mine: "its subnet 10.210.0.0/24 is this Machine's own",
    "no-subnet": "its row names no subnet",
    "same-key": "another Machine has the same WireGuard key",
    "clash-1": 'its subnet 10.210.4.0/24 is also claimed by "clash-2"',
    "clash-2": 'its subnet 10.210.4.0/24 is also claimed by "clash-1"',
  });
});

Deno.test("usablePeers keeps the Machine configured with a subnet when a newcomer claims it too", () => {
  const rows = [
    { machineId: "live", publicKey: KEY_A, subnet: "10.210.4.0/24" },
    { machineId: "new", publicKey: KEY_B, subnet: "10.210.4.0/24" },
  ];
  const verdict = usablePeers(rows, { ...OPTIONS, incumbents: new Map([["10.210.4.0/24", "live"]]) });
  deepEqual(verdict.peers.map((p) => p.machineId), ["live"]);
  deepEqual(verdict.skipped, [{
    machineId: "new",
    reason: 'its subnet 10.210.4.0/24 is also claimed by "live"',
  }]);
});

Deno.test("usablePeers never throws, whatever the rows hold", () => {
  const junk: unknown[] = [
    null,
    1,
    "s",
    [],
    {},
    { toString: 1 },
    "300.1.1.0/24",
    "10.210.1.0/33",
    "-1.0.0.0/24",
  ];
  for (const subnet of junk) {
    for (const publicKey of [...junk, KEY_A]) {
      const verdict = usablePeers([{ machineId: "m", publicKey, subnet, endpoints: subnet }], OPTIONS);
      equal(verdict.peers.length, 0);
    }
  }
});

Deno.test("quarantinedPeers allows a retired Machine only its gateway, and never a key a live peer holds", () => {
  const quarantine = quarantinedPeers([
    { machineId: "gone", publicKey: KEY_A, subnet: "10.210.3.0/24" },
    { machineId: "self", publicKey: KEY_B, subnet: "10.210.4.0/24" },
    { machineId: "back-under-a-new-id", publicKey: KEY_B, subnet: "10.210.5.0/24" },
    { machineId: "no-key", subnet: "10.210.6.0/24" },
    { machineId: "outside", publicKey: KEY_C, subnet: "10.99.1.0/24" },
    { machineId: "wide", publicKey: KEY_C, subnet: "10.210.0.0/16" },
    { machineId: "twice", publicKey: KEY_A, subnet: "10.210.7.0/24" },
  ], { selfId: "self", clusterNetwork: "10.210.0.0/16", liveKeys: new Set([KEY_B]) });
  deepEqual(quarantine, [{ machineId: "gone", publicKey: KEY_A, address: "10.210.3.1/32" }]);
  deepEqual(
    quarantinedPeers([{ machineId: "gone", publicKey: KEY_A, subnet: "10.210.3.0/24" }], {
      selfId: "self",
      clusterNetwork: "10.210.0.0/16",
      liveKeys: new Set(),
      ownKey: KEY_A,
    }),
    [],
    "a retired row carrying this Machine's own key",
  );
});
