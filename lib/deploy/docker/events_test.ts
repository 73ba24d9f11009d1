import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import type { Client } from "./client.ts";
import { DEFAULT_DEADLINES } from "./deadline.ts";
import { containerEvents } from "./events.ts";
import { answerWithin, sleep } from "../../util/mod.ts";
import { DEFAULT_LOG_POLICY } from "./spec.ts";

/** A client whose every request answers `stream`, as Docker answers `GET /events` with its headers. */
function answering(stream: PassThrough): Client {
  return {
    machineId: "m1",
    socketPath: "/nowhere",
    deadlines: DEFAULT_DEADLINES,
    network: "ployz",
    extraLabels: {},
    log: DEFAULT_LOG_POLICY,
    send: () => Promise.resolve(stream),
  };
}

Deno.test("an aborted event stream ends at once, even when destroying the response settles nothing", async () => {
  const stream = new PassThrough();
  // As seen once under load: the response's pending read never settles after destroy().
  stream.destroy = () => stream;
  const controller = new AbortController();
  const seen: string[] = [];
  const following = (async () => {
    for await (const event of containerEvents(answering(stream), controller.signal)) seen.push(event.action);
  })();
  stream.write(
    JSON.stringify({
      Type: "container",
      Action: "start",
      Actor: { ID: "c1", Attributes: { "ployz.managed": "1", "ployz.machine": "m1" } },
      timeNano: 1,
    }) + "\n",
  );
  await sleep(20);
  controller.abort();
  await answerWithin(
    following,
    1_000,
    () => new Error("the event follower did not end within 1 s of the abort"),
  );
  assert.deepEqual(seen, ["start"]);
});

Deno.test("an event stream Docker ends is reported as unavailable: events may have been lost", async () => {
  const stream = new PassThrough();
  const following = (async () => {
    for await (const _ of containerEvents(answering(stream), new AbortController().signal)) {
      // none
    }
  })();
  stream.end();
  await assert.rejects(following, /Docker ended the event stream/);
});
