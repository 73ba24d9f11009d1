import assert from "node:assert/strict";
import { stopWithin } from "./bounded_stop.ts";

Deno.test("a stop that never finishes fails after its bound, naming what it was still doing", async () => {
  let stage = "closing its Machine RPC socket";
  const never = new Promise<void>(() => {
    stage = "stopping the store, mesh, publisher and serving";
  });
  await assert.rejects(
    stopWithin(never, 50, () => stage),
    new Error(
      "The daemon's stop was still stopping the store, mesh, publisher and serving after 50 ms; exiting without it",
    ),
  );
});

Deno.test("a stop that finishes in time passes; its own error passes through", async () => {
  await stopWithin(Promise.resolve(), 1_000, () => "anything");
  await assert.rejects(
    stopWithin(Promise.reject(new Error("store locked")), 1_000, () => "x"),
    /^Error: store locked$/,
  );
});
