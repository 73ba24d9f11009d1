import { deepEqual, equal, ok, rejects } from "node:assert/strict";
import { connectMachine } from "./client.ts";
import { RpcError } from "./errors.ts";
import { encodeFrame, FRAME, MAX_FRAME, muxSession, readFrames } from "./mux.ts";
import { muxFetch } from "./stdio_transport.ts";
import { spawnDialStdio, startTestDaemon } from "./test_daemon.ts";

const encoder = new TextEncoder();

Deno.test("one `dial-stdio --mux` process carries concurrent calls and an open stream beside them", async () => {
  let tail!: ReadableStreamDefaultController<Uint8Array>;
  await using daemon = await startTestDaemon({
    // A stream that stays open until the test ends it: `logs -f` over the same connection as other calls.
    tailLogs: () =>
      Promise.resolve(
        new ReadableStream<Uint8Array>({
          start(controller) {
            tail = controller;
            controller.enqueue(encoder.encode("first\n"));
          },
        }),
      ),
  });
  const child = spawnDialStdio(daemon.dir, "--mux");
  const stderr = new Response(child.stderr).text();
  const session = muxSession(child.stdout, child.stdin);
  const client = connectMachine({ label: "mux", fetch: muxFetch(session, "mux") });
  try {
    const reader = (await client.tailLogs({ selector: {} })).getReader();
    equal(new TextDecoder().decode((await reader.read()).value), "first\n");
    const answers = await Promise.all(Array.from({ length: 20 }, () => client.describeContract()));
    deepEqual(new Set(answers.map((a) => a.machine_name)), new Set(["one"]));
    // describeContract is cached per client; a fresh client on the same session asks again, 20 at once.
    const many = await Promise.all(
      Array.from(
        { length: 20 },
        () => connectMachine({ fetch: muxFetch(session, "mux") }).describeContract(),
      ),
    );
    equal(many.length, 20);
    tail.enqueue(encoder.encode("second\n"));
    equal(new TextDecoder().decode((await reader.read()).value), "second\n");
    tail.close();
    ok((await reader.read()).done);
    const refused = await client.inspectImage({ ref: "busybox" }).catch((e) => e);
    ok(refused instanceof RpcError);
    equal(refused.code, "unsupported");
  } finally {
    client.close();
    await session.close();
    const status = await child.status;
    await stderr;
    equal(status.code, 0);
  }
});

Deno.test("`dial-stdio --mux` with no daemon exits before greeting, and the caller hears why", async () => {
  const dir = await Deno.makeTempDir({ prefix: "ployz-mux-" });
  const child = spawnDialStdio(dir, "--mux");
  const stderr = new Response(child.stderr).text();
  const session = muxSession(child.stdout, child.stdin);
  const client = connectMachine({ label: "mux", fetch: muxFetch(session, "ssh far", () => stderr) });
  try {
    const error = await client.describeContract().catch((e) => e);
    ok(error instanceof RpcError);
    equal(error.code, "unavailable");
    ok(error.message.includes("Cannot connect to the Machine RPC socket"), error.message);
  } finally {
    client.close();
    await session.close();
    await child.status;
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("readFrames refuses a frame longer than MAX_FRAME and reassembles split frames", async () => {
  const frame = encodeFrame(FRAME.data, 7, encoder.encode("hello"));
  const split = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(frame.slice(0, 3));
      c.enqueue(frame.slice(3));
      c.close();
    },
  });
  const frames = [];
  for await (const f of readFrames(split)) frames.push(f);
  deepEqual(frames.map((f) => [f.type, f.stream, new TextDecoder().decode(f.payload)]), [[2, 7, "hello"]]);
  const huge = new Uint8Array(9);
  new DataView(huge.buffer).setUint32(5, MAX_FRAME + 1);
  await rejects(async () => {
    for await (const _ of readFrames(new Blob([huge]).stream())) {
      // unreachable
    }
  }, /larger than/);
});
