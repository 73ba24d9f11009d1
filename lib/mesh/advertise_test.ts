import { deepEqual, throws } from "node:assert/strict";
import { defaultEndpoints, parseEndpoints } from "./advertise.ts";

Deno.test("defaultEndpoints keeps the host's own IPv4 addresses and skips loopback, bridges and mesh addresses", () => {
  const found = defaultEndpoints([
    { name: "lo", family: "IPv4", address: "127.0.0.1" },
    { name: "eth0", family: "IPv4", address: "203.0.113.7" },
    { name: "eth0", family: "IPv6", address: "2001:db8::7" },
    { name: "docker0", family: "IPv4", address: "172.17.0.1" },
    { name: "br-1234", family: "IPv4", address: "10.210.3.1" },
    { name: "eth1", family: "IPv4", address: "10.210.9.9" },
    { name: "eth2", family: "IPv4", address: "169.254.1.1" },
    { name: "ens5", family: "IPv4", address: "192.0.2.11" },
  ], { port: 51820, clusterNetwork: "10.210.0.0/16" });
  deepEqual(found, ["203.0.113.7:51820", "192.0.2.11:51820"]);
});

Deno.test("parseEndpoints reads host:port lists and refuses anything else", () => {
  deepEqual(parseEndpoints("192.0.2.1:51820, host.example:1,[2001:db8::1]:51820"), [
    "192.0.2.1:51820",
    "host.example:1",
    "[2001:db8::1]:51820",
  ]);
  throws(() => parseEndpoints("192.0.2.1"), /Invalid endpoint "192.0.2.1": expected host:port/);
  throws(() => parseEndpoints("a:70000"), /Invalid endpoint/);
});
