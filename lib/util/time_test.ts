import assert from "node:assert/strict";
import { answerWithin, pollUntil, sleep } from "./time.ts";

Deno.test("sleep resolves at once when its signal aborts", async () => {
  const stop = new AbortController();
  const started = Date.now();
  const slept = sleep(10_000, stop.signal);
  stop.abort();
  await slept;
  assert.ok(Date.now() - started < 1_000);
});

Deno.test("pollUntil returns the first answer that is not undefined or false", async () => {
  let asks = 0;
  const found = await pollUntil(() => ++asks === 3 ? "ready" : false, { timeoutMs: 5_000, intervalMs: 1 });
  assert.equal(found, "ready");
  assert.equal(asks, 3);
});

Deno.test("pollUntil returns undefined once the time is up, having asked again at the deadline", async () => {
  let asks = 0;
  const found = await pollUntil(() => {
    asks++;
    return Promise.resolve(undefined);
  }, { timeoutMs: 30, intervalMs: 10 });
  assert.equal(found, undefined);
  assert.ok(asks >= 2, `asked ${asks} times`);
});

Deno.test("answerWithin passes an answer through and rejects with late() once the bound passed", async () => {
  assert.equal(await answerWithin(Promise.resolve(7), 1_000, () => new Error("late")), 7);
  const started = Date.now();
  await assert.rejects(answerWithin(new Promise(() => {}), 50, () => new Error("no answer in 50 ms")), {
    message: "no answer in 50 ms",
  });
  assert.ok(Date.now() - started < 5_000);
});
