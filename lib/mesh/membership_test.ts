import assert from "node:assert/strict";
import { observeMembership } from "./membership.ts";

const now = 1_000_000_000;
const s = 1000;

Deno.test("observeMembership() is unknown without any evidence", () => {
  assert.equal(observeMembership({ now }), "unknown");
});

Deno.test("observeMembership() follows handshake age: up, suspect, down", () => {
  assert.equal(observeMembership({ now, latestHandshake: now - 10 * s }), "up");
  assert.equal(observeMembership({ now, latestHandshake: now - 184 * s }), "up");
  assert.equal(observeMembership({ now, latestHandshake: now - 200 * s }), "suspect");
  assert.equal(observeMembership({ now, latestHandshake: now - 275 * s }), "down");
});

Deno.test("observeMembership() counts recent store traffic as up and old traffic as suspect", () => {
  assert.equal(
    observeMembership({ now, latestHandshake: now - 400 * s, lastStoreTraffic: now - 5 * s }),
    "up",
  );
  assert.equal(observeMembership({ now, lastStoreTraffic: now - 60 * s }), "suspect");
  assert.equal(observeMembership({ now, lastStoreTraffic: now - 300 * s }), "down");
});

Deno.test("observeMembership() takes custom thresholds", () => {
  const t = { handshakeUpMs: 2 * s, storeUpMs: 1 * s, downAfterMs: 5 * s };
  assert.equal(observeMembership({ now, latestHandshake: now - 3 * s }, t), "suspect");
  assert.equal(observeMembership({ now, latestHandshake: now - 6 * s }, t), "down");
});
