import assert from "node:assert/strict";
import { parseDump } from "./wireguard.ts";

Deno.test("parseDump() drops the interface line and parses peers", () => {
  const text = [
    "cHJpdmF0ZS1rZXktbmV2ZXItcmVhZC1oZXJlLTAwMDAwMDA=\tpub\t51820\toff",
    "UEVFUjEtMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDA=\t(none)\t192.0.2.12:51820\t10.210.1.0/24,fdcc::1/128\t1700000000\t100\t200\t25",
    "UEVFUjItMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDA=\t(none)\t(none)\t(none)\t0\t0\t0\toff",
    "",
  ].join("\n");
  const peers = parseDump(text);
  assert.equal(peers.length, 2);
  assert.deepEqual(peers[0], {
    publicKey: "UEVFUjEtMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDA=",
    endpoint: "192.0.2.12:51820",
    allowedIps: ["10.210.1.0/24", "fdcc::1/128"],
    latestHandshake: 1_700_000_000_000,
    rxBytes: 100,
    txBytes: 200,
  });
  assert.equal(peers[1].endpoint, undefined);
  assert.equal(peers[1].latestHandshake, undefined);
  assert.deepEqual(peers[1].allowedIps, []);
  assert.ok(!JSON.stringify(peers).includes("cHJpdmF0ZS1rZXkt"));
});
