import assert from "node:assert/strict";
import {
  endpointStatus,
  newEndpointSelection,
  pollEndpoint,
  replaceCandidates,
  selectedEndpoint,
} from "./endpoint.ts";

const s = 1000;
const t0 = 1_000_000_000;
const A = "192.0.2.1:51820";
const B = "198.51.100.1:51820";
const C = "203.0.113.1:51820";

Deno.test("a new selection tests the first candidate, or keeps a remembered one", () => {
  assert.deepEqual(newEndpointSelection([A, B], undefined, t0).state, {
    kind: "testing",
    endpoint: A,
    since: t0,
  });
  assert.deepEqual(newEndpointSelection([A, B], B, t0).state, { kind: "established", endpoint: B });
  assert.deepEqual(newEndpointSelection([], undefined, t0).state, { kind: "unselected" });
});

Deno.test("testing moves to the next candidate when no handshake comes within 15 s", () => {
  let sel = newEndpointSelection([A, B, C], undefined, t0);
  assert.equal(endpointStatus(sel, t0 + 5 * s, undefined), "unknown");
  let r = pollEndpoint(sel, { now: t0 + 5 * s, deviceEndpoint: A });
  assert.equal(r.changed, undefined);
  r = pollEndpoint(r.selection, { now: t0 + 16 * s, deviceEndpoint: A });
  assert.equal(r.changed, B);
  sel = r.selection;
  r = pollEndpoint(sel, { now: t0 + 32 * s, deviceEndpoint: B });
  assert.equal(r.changed, C);
  r = pollEndpoint(r.selection, { now: t0 + 48 * s, deviceEndpoint: C });
  assert.equal(r.changed, A, "cycles back to the first candidate");
});

Deno.test("a handshake after the switch establishes the endpoint; 275 s of silence rotates it", () => {
  const sel = newEndpointSelection([A, B], undefined, t0);
  let r = pollEndpoint(sel, { now: t0 + 20 * s, latestHandshake: t0 + 2 * s, deviceEndpoint: A });
  assert.equal(r.changed, undefined);
  assert.deepEqual(r.selection.state, { kind: "established", endpoint: A });
  r = pollEndpoint(r.selection, { now: t0 + 200 * s, latestHandshake: t0 + 2 * s, deviceEndpoint: A });
  assert.equal(r.changed, undefined);
  r = pollEndpoint(r.selection, { now: t0 + 280 * s, latestHandshake: t0 + 2 * s, deviceEndpoint: A });
  assert.equal(r.changed, B);
});

Deno.test("a handshake from before the switch does not count for the new endpoint", () => {
  const sel = newEndpointSelection([A, B], undefined, t0);
  const r = pollEndpoint(sel, { now: t0 + 16 * s, latestHandshake: t0 - 1 * s, deviceEndpoint: A });
  assert.equal(r.changed, B);
});

Deno.test("a handshake in the same whole second as the switch counts for the new endpoint", () => {
  // WireGuard reports handshakes in whole seconds: one 300 ms after a switch at t0 + 0.7 s reads as t0.
  const sel = newEndpointSelection([A, B], undefined, t0 + 700);
  const r = pollEndpoint(sel, { now: t0 + 16 * s, latestHandshake: t0, deviceEndpoint: A });
  assert.equal(r.changed, undefined);
  assert.deepEqual(r.selection.state, { kind: "established", endpoint: A });
});

Deno.test("a roamed endpoint reported by the interface is adopted", () => {
  const sel = newEndpointSelection([A, B], undefined, t0);
  const r = pollEndpoint(sel, { now: t0 + 1 * s, latestHandshake: t0 + 1 * s, deviceEndpoint: C });
  assert.equal(r.changed, undefined);
  assert.equal(selectedEndpoint(r.selection), C);
});

Deno.test("replaceCandidates() starts an unselected peer and keeps a selected one", () => {
  const empty = newEndpointSelection([], undefined, t0);
  const started = replaceCandidates(empty, [B], t0);
  assert.equal(started.changed, B);
  const kept = replaceCandidates(started.selection, [C], t0);
  assert.equal(kept.changed, undefined);
  assert.equal(selectedEndpoint(kept.selection), B);
});

Deno.test("custom timing shortens the connection timeout", () => {
  const timing = { connectionTimeoutMs: 2 * s, peerDownMs: 10 * s };
  const sel = newEndpointSelection([A, B], undefined, t0);
  assert.equal(pollEndpoint(sel, { now: t0 + 3 * s, deviceEndpoint: A }, timing).changed, B);
});
