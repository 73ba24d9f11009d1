import { deepEqual, equal } from "node:assert/strict";
import { manualClock } from "../util/testing/mod.ts";
import { waitForAcks } from "./container_leave.ts";

/** `waitForAcks` over `read` on a clock moved only by the pauses it asks for (at 1 000 ms), and those pauses. */
async function waitOn<S extends { missing: readonly string[] }>(
  read: () => S,
  options: { startedMs: number; waitMs: number; signal?: AbortSignal },
): Promise<{ result: { status: S; waited: number }; pauses: number[] }> {
  const clock = manualClock();
  const result = await waitForAcks(read, {
    signal: new AbortController().signal,
    ...options,
    pause: clock.sleep,
    now: clock.now,
  });
  return { result, pauses: clock.slept };
}

Deno.test("waitForAcks: stops once no Machine is missing, with the status that said so", async () => {
  const answers = [["b", "c"], ["c"], []];
  let reads = 0;
  const { result, pauses } = await waitOn(() => ({ acked: [], missing: answers[Math.min(reads++, 2)] }), {
    startedMs: 1_000,
    waitMs: 5_000,
  });
  deepEqual(result.status.missing, []);
  equal(result.waited, 200);
  deepEqual(pauses, [100, 100]);
});

Deno.test("waitForAcks: the caller's patience ends the wait, the last pause cut to what is left", async () => {
  const { result, pauses } = await waitOn(() => ({ missing: ["b"] }), { startedMs: 1_000, waitMs: 250 });
  deepEqual(result.status.missing, ["b"]);
  equal(result.waited, 250);
  deepEqual(pauses, [100, 100, 50]);
});

Deno.test("waitForAcks: a caller gone away gets the status read now, without a pause", async () => {
  const gone = new AbortController();
  gone.abort();
  const { result, pauses } = await waitOn(() => ({ missing: ["b"] }), {
    startedMs: 1_000,
    waitMs: 5_000,
    signal: gone.signal,
  });
  deepEqual(result, { status: { missing: ["b"] }, waited: 0 });
  deepEqual(pauses, []);
});

Deno.test("waitForAcks: time spent before the first read (the republish) counts against the patience", async () => {
  const { result, pauses } = await waitOn(() => ({ missing: ["b"] }), { startedMs: 0, waitMs: 500 });
  equal(result.waited, 1_000);
  deepEqual(pauses, []);
});
