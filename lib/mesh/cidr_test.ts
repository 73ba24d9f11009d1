import assert from "node:assert/strict";
import fc from "fast-check";
import { formatIpv4, formatIpv6, networksOverlap, parseIpv4, parseIpv4Network } from "./cidr.ts";
import { MeshError } from "./errors.ts";

Deno.test("parseIpv4() and formatIpv4() round-trip every address", () => {
  fc.assert(fc.property(fc.ipV4(), (text) => assert.equal(formatIpv4(parseIpv4(text)), text)));
});

Deno.test("parseIpv4() refuses leading zeros, large octets and junk", () => {
  for (const bad of ["010.1.1.1", "256.0.0.1", "1.2.3", "1.2.3.4.5", "a.b.c.d", ""]) {
    assert.throws(() => parseIpv4(bad), (e) => e instanceof MeshError && e.code === "invalid_argument");
  }
});

Deno.test("parseIpv4Network() names the network when host bits are set", () => {
  assert.deepEqual(parseIpv4Network("10.210.0.0/16"), { address: parseIpv4("10.210.0.0"), prefix: 16 });
  assert.throws(
    () => parseIpv4Network("10.210.0.1/16"),
    { message: 'Cannot parse network "10.210.0.1/16": host bits are set (the network is "10.210.0.0/16")' },
  );
  assert.throws(() => parseIpv4Network("10.0.0.0/33"), /prefix must be 0 to 32/);
  assert.throws(() => parseIpv4Network("10.0.0.0"), /expected "a.b.c.d\/prefix"/);
  assert.deepEqual(parseIpv4Network("0.0.0.0/0"), { address: 0, prefix: 0 });
});

Deno.test("networksOverlap() is true exactly when one network contains the other", () => {
  const n = (t: string) => parseIpv4Network(t);
  assert.equal(networksOverlap(n("10.210.0.0/16"), n("10.210.7.0/24")), true);
  assert.equal(networksOverlap(n("10.210.7.0/24"), n("10.210.0.0/16")), true);
  assert.equal(networksOverlap(n("10.210.7.0/24"), n("10.210.8.0/24")), false);
  assert.equal(networksOverlap(n("10.210.6.0/23"), n("10.210.7.0/24")), true);
});

Deno.test("formatIpv6() follows RFC 5952", () => {
  const bytes = (groups: number[]) => new Uint8Array(groups.flatMap((g) => [g >> 8, g & 0xff]));
  assert.equal(formatIpv6(bytes([0xfdcc, 0, 0, 0, 0, 0, 0, 1])), "fdcc::1");
  assert.equal(formatIpv6(bytes([0x2001, 0xdb8, 0, 1, 0, 0, 0, 1])), "2001:db8:0:1::1");
  assert.equal(formatIpv6(bytes([0x2001, 0xdb8, 0, 0, 1, 0, 0, 1])), "2001:db8::1:0:0:1");
  assert.equal(formatIpv6(bytes([0xfdcc, 0xabcd, 1, 2, 3, 4, 5, 6])), "fdcc:abcd:1:2:3:4:5:6");
  assert.equal(formatIpv6(bytes([0, 0, 0, 0, 0, 0, 0, 0])), "::");
});
