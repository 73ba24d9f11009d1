import { equal } from "node:assert/strict";
import * as net from "node:net";
import fc from "fast-check";
import { isIPv4, isIPv6 } from "./ip.ts";

const SAMPLES = [
  "0.0.0.0",
  "10.210.1.5",
  "255.255.255.255",
  "256.1.1.1",
  "01.2.3.4",
  "1.2.3",
  "1.2.3.4.5",
  "1.2.3.4 ",
  "",
  "::",
  "::1",
  "fd00::1",
  "fe80::1:2:3:4",
  "1:2:3:4:5:6:7:8",
  "1:2:3:4:5:6:7:8:9",
  "1:2:3:4:5:6:7::",
  "1::2::3",
  "::ffff:10.0.0.1",
  "::10.0.0.1",
  "1:2:3:4:5:6:10.0.0.1",
  "1:2:3:4:5:6:7:10.0.0.1",
  "::ffff:10.0.0.256",
  "12345::1",
  "g::1",
  ":1",
  "1:",
  ":::",
  "[::1]",
  "localhost",
  "1.2.3.4:53",
];

Deno.test("isIPv4() and isIPv6() agree with node:net on valid and invalid addresses", () => {
  for (const text of SAMPLES) {
    equal(isIPv4(text), net.isIPv4(text), `isIPv4("${text}")`);
    equal(isIPv6(text), net.isIPv6(text), `isIPv6("${text}")`);
  }
});

Deno.test("isIPv4() and isIPv6() accept every generated address and agree with node:net on mangled ones", () => {
  fc.assert(fc.property(fc.ipV4(), (ip) => isIPv4(ip) && !isIPv6(ip)));
  fc.assert(fc.property(fc.ipV6(), (ip) => isIPv6(ip) && !isIPv4(ip)));
  fc.assert(
    fc.property(
      fc.oneof(fc.ipV4(), fc.ipV6()),
      fc.nat(),
      fc.constantFrom(":", ".", "0", "f", "::", ""),
      (ip, at, s) => {
        const text = ip.slice(0, at % (ip.length + 1)) + s + ip.slice(at % (ip.length + 1));
        return isIPv4(text) === net.isIPv4(text) && isIPv6(text) === net.isIPv6(text);
      },
    ),
    { numRuns: 2000 },
  );
});
