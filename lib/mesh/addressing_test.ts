import assert from "node:assert/strict";
import {
  clusterNetworkOf,
  DEFAULT_CLUSTER_NETWORK,
  machineSubnets,
  managementAddress,
  parseClusterNetwork,
  parseMachineSubnet,
  peerAllowedIps,
  subnetInNetwork,
} from "./addressing.ts";
import { generatePrivateKey, publicKeyOf } from "./keys.ts";

Deno.test("machineSubnets() splits the default network into 256 /24s", () => {
  const subnets = machineSubnets(DEFAULT_CLUSTER_NETWORK);
  assert.equal(subnets.length, 256);
  assert.equal(subnets[0], "10.210.0.0/24");
  assert.equal(subnets[255], "10.210.255.0/24");
  assert.deepEqual(machineSubnets("192.168.4.0/24"), ["192.168.4.0/24"]);
});

Deno.test("parseClusterNetwork() refuses networks smaller than a /24", () => {
  assert.throws(() => parseClusterNetwork("10.0.0.0/25"), /must hold a \/24/);
});

Deno.test("parseMachineSubnet() gives the gateway and refuses other prefixes", () => {
  assert.deepEqual(parseMachineSubnet("10.210.3.0/24"), { subnet: "10.210.3.0/24", gateway: "10.210.3.1" });
  assert.throws(() => parseMachineSubnet("10.210.0.0/23"), {
    message: 'Cannot use Machine Subnet "10.210.0.0/23": it must be a /24',
  });
  assert.throws(() => parseMachineSubnet("10.210.3.1/24"), /host bits are set/);
  assert.equal(subnetInNetwork("10.210.3.0/24", DEFAULT_CLUSTER_NETWORK), true);
  assert.equal(subnetInNetwork("10.211.3.0/24", DEFAULT_CLUSTER_NETWORK), false);
});

Deno.test("clusterNetworkOf() is the configured network when it holds the subnet, else the /16 around it", () => {
  assert.equal(clusterNetworkOf("10.210.3.0/24"), DEFAULT_CLUSTER_NETWORK);
  assert.equal(clusterNetworkOf("10.217.1.0/24"), "10.217.0.0/16");
  assert.equal(clusterNetworkOf("192.168.7.0/24", "10.0.0.0/8"), "192.168.0.0/16");
  assert.equal(clusterNetworkOf("10.9.1.0/24", "10.0.0.0/8"), "10.0.0.0/8");
  assert.equal(clusterNetworkOf("not a subnet"), DEFAULT_CLUSTER_NETWORK);
});

Deno.test("managementAddress() is fdcc: plus the key's first 14 bytes", () => {
  const key = btoa(String.fromCharCode(...Array.from({ length: 32 }, (_, i) => i + 1)));
  assert.equal(managementAddress(key), "fdcc:102:304:506:708:90a:b0c:d0e");
  const zeros = btoa(String.fromCharCode(...new Array(32).fill(0)));
  assert.equal(managementAddress(zeros), "fdcc::");
  const real = publicKeyOf(generatePrivateKey());
  assert.match(managementAddress(real), /^fdcc:/);
  assert.deepEqual(peerAllowedIps("10.210.1.0/24", key), [
    "10.210.1.0/24",
    "fdcc:102:304:506:708:90a:b0c:d0e/128",
  ]);
  assert.throws(() => managementAddress("nope"), /Cannot parse WireGuard public key "nope"/);
});
