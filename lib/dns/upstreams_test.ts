import { deepEqual } from "node:assert/strict";
import { chooseUpstreams, resolvConfNameservers } from "./upstreams.ts";

const RESOLV = `# generated
search example.internal
nameserver 10.210.1.1
nameserver 192.0.2.53 # office
nameserver ::1
options ndots:1
nameserver 192.0.2.53
`;

Deno.test("resolvConfNameservers() reads nameserver lines in order, ignoring comments", () => {
  deepEqual(resolvConfNameservers(RESOLV), ["10.210.1.1", "192.0.2.53", "::1", "192.0.2.53"]);
});

Deno.test("chooseUpstreams() uses resolv.conf without forwarding to itself, to IPv6 or twice", () => {
  const choice = chooseUpstreams(undefined, RESOLV, [{ hostname: "10.210.1.1", port: 53 }]);
  deepEqual(choice.upstreams, [{ hostname: "192.0.2.53", port: 53 }]);
  deepEqual(choice.ignored.length, 2);
});

Deno.test("chooseUpstreams() prefers the spec's upstreams over resolv.conf", () => {
  const choice = chooseUpstreams(["198.51.100.1:5300", "127.0.0.1:53"], RESOLV, [
    { hostname: "127.0.0.1", port: 53 },
  ]);
  deepEqual(choice.upstreams, [{ hostname: "198.51.100.1", port: 5300 }]);
});

Deno.test("chooseUpstreams() forwards nowhere when there is nothing to forward to", () => {
  deepEqual(chooseUpstreams(undefined, undefined, []).upstreams, []);
  deepEqual(chooseUpstreams([], RESOLV, []).upstreams, []);
});
