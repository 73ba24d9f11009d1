import assert from "node:assert/strict";
import { decodeHlc, encodeHlc, HybridClock } from "./hlc.ts";

Deno.test("hlc encoding orders like time", () => {
  const times = [{ ms: 0, counter: 5 }, { ms: 1, counter: 0 }, { ms: 1, counter: 16 }, {
    ms: 2 ** 40,
    counter: 0,
  }];
  const encoded = times.map(encodeHlc);
  assert.deepEqual([...encoded].sort(), encoded);
  assert.deepEqual(encoded.map(decodeHlc), times);
});

Deno.test("hlc ticks strictly increase when the wall clock stalls or goes back", () => {
  let wall = 1000;
  const clock = new HybridClock(() => wall);
  const a = clock.tick();
  const b = clock.tick();
  wall = 900;
  const c = clock.tick();
  wall = 2000;
  const d = clock.tick();
  assert.ok(a < b && b < c && c < d);
  assert.deepEqual(decodeHlc(c), { ms: 1000, counter: 2 });
  assert.deepEqual(decodeHlc(d), { ms: 2000, counter: 0 });
});

Deno.test("hlc moves past an observed remote time", () => {
  const clock = new HybridClock(() => 1000);
  const remote = encodeHlc({ ms: 5000, counter: 7 });
  clock.observe(remote);
  const next = clock.tick();
  assert.ok(next > remote);
  assert.deepEqual(decodeHlc(next), { ms: 5000, counter: 8 });
  clock.observe(encodeHlc({ ms: 10, counter: 0 }));
  assert.ok(clock.tick() > next);
});

Deno.test("hlc counter overflow borrows from milliseconds", () => {
  const clock = new HybridClock(() => 1);
  clock.observe(encodeHlc({ ms: 1, counter: 0xffffff }));
  assert.deepEqual(decodeHlc(clock.tick()), { ms: 2, counter: 0 });
});

Deno.test("hlc never encodes past its 18 digits, and a full counter keeps the width", () => {
  assert.throws(() => encodeHlc({ ms: 0x1000000000000, counter: 0 }), RangeError);
  assert.throws(() => encodeHlc({ ms: 1, counter: 0x1000000 }), RangeError);
  const clock = new HybridClock(() => 1000);
  clock.observe(encodeHlc({ ms: 1000, counter: 0xffffff }));
  const next = clock.tick();
  assert.equal(next.length, 18);
  assert.deepEqual(decodeHlc(next), { ms: 1001, counter: 0 });
});
