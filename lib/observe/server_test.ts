import assert from "node:assert/strict";
import { join } from "node:path";
import { Ingester } from "./ingester.ts";
import { type LogStore, openLogStore } from "./log_store.ts";
import { MAX_OBSERVE_REQUEST_BYTES, serveObserveSocket } from "./server.ts";
import { append, frames, makeContainer, numbered, ployzLabels, T0, tempDir } from "./test_support.ts";
import { streamedBody } from "../util/testing/mod.ts";

const ID = "d".repeat(64);

/** A Log Store in `dir` served on `dir/observe.sock`, and an HTTP client on the socket; disposing ends them. */
async function serve(
  dir: string,
): Promise<{ store: LogStore; path: string; client: Deno.HttpClient } & AsyncDisposable> {
  const store = openLogStore({ path: join(dir, "observe.db") });
  const stop = new AbortController();
  const path = join(dir, "observe.sock");
  const server = await serveObserveSocket(store, path, stop.signal);
  const client = Deno.createHttpClient({ proxy: { transport: "unix", path } });
  return {
    store,
    path,
    client,
    async [Symbol.asyncDispose](): Promise<void> {
      client.close();
      stop.abort();
      await server.finished;
      store.close();
    },
  };
}

Deno.test("observe.sock answers log_history and streams tail_logs as NDJSON", async () => {
  await using dir = await tempDir();
  const dockerRoot = join(dir.path, "docker");
  const logDir = await makeContainer(dockerRoot, ID, ployzLabels("api"));
  await append(join(logDir, "container.log"), frames(numbered("api", 3)));
  await using served = await serve(dir.path);
  const { store, path, client } = served;
  assert.equal((await Deno.stat(path)).mode! & 0o777, 0o660);
  const ingester = new Ingester(store, { dockerRoot });
  await ingester.scan();
  await ingester.poll();
  const post = (route: string, body: unknown, signal?: AbortSignal) =>
    fetch(`http://observe${route}`, { method: "POST", body: JSON.stringify(body), client, signal });

  const history = await post("/observe/v1/log_history", {
    service: "api",
    since: T0.toString(),
    limit: 10,
  });
  assert.equal(history.status, 200);
  const body = await history.json();
  assert.deepEqual(body.lines.map((l: { text: string }) => l.text), ["api 0", "api 1", "api 2"]);
  assert.equal(body.lines[0].time_nano, T0.toString());
  assert.equal(body.lines[0].time, "2026-01-01T00:00:00.000000000Z");
  assert.equal(body.lines[0].container_id, ID);

  const unknown = await (await post("/observe/v1/log_history", {
    service: "none",
    since: "2026-01-01T00:00:00Z",
    limit: 10,
  })).json();
  assert.deepEqual(unknown.lines, []);
  assert.match(unknown.notes[0], /service "none"/);

  const bad = await post("/observe/v1/log_history", {
    service: "api",
    since: "yesterday",
    limit: 10,
    extra: 1,
  });
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).code, "invalid_argument");

  const tailAbort = new AbortController();
  const tail = await post(
    "/observe/v1/tail_logs",
    { service: "api", since: T0.toString(), backlog: 2 },
    tailAbort.signal,
  );
  assert.equal(tail.headers.get("content-type"), "application/x-ndjson");
  const reader = tail.body!.pipeThrough(new TextDecoderStream()).getReader();
  const seen: string[] = [];
  let buffered = "";
  const next = async (): Promise<void> => {
    while (!buffered.includes("\n")) {
      const chunk = await reader.read();
      if (chunk.done) throw new Error("tail ended early");
      buffered += chunk.value;
    }
    const at = buffered.indexOf("\n");
    const event = JSON.parse(buffered.slice(0, at));
    buffered = buffered.slice(at + 1);
    if (event.type === "line") seen.push(event.text);
  };
  await next();
  await next();
  assert.deepEqual(seen, ["api 1", "api 2"]);
  await append(join(logDir, "container.log"), frames(numbered("api", 2, T0, 3)));
  await ingester.poll();
  while (seen.length < 4) await next();
  assert.deepEqual(seen, ["api 1", "api 2", "api 3", "api 4"]);
  await reader.cancel();
});

Deno.test("a stale socket file is replaced; a live one is refused with conflict", async () => {
  await using dir = await tempDir();
  const path = join(dir.path, "observe.sock");
  // A process that dies while listening leaves its socket file behind.
  const code = `Deno.listen({ transport: "unix", path: ${JSON.stringify(path)} }); Deno.exit(0);`;
  await new Deno.Command(Deno.execPath(), { args: ["eval", code], stdout: "null", stderr: "null" }).output();
  assert.ok((await Deno.stat(path)).isSocket);
  const store = openLogStore({ path: join(dir.path, "observe.db") });
  const stop = new AbortController();
  try {
    const server = await serveObserveSocket(store, path, stop.signal);
    await assert.rejects(serveObserveSocket(store, path, stop.signal), /another process already answers/);
    stop.abort();
    await server.finished;
  } finally {
    stop.abort();
    store.close();
  }
});

Deno.test("observe.sock refuses a 100 MB chunked body at its cap without reading the rest", async () => {
  await using dir = await tempDir();
  await using served = await serve(dir.path);
  const { client } = served;
  const total = 100 * 1024 * 1024;
  // No content-length: the server can only find the size by reading.
  const { body, pulled } = streamedBody(64 * 1024, total);
  const response = await fetch("http://observe/observe/v1/log_history", { method: "POST", body, client });
  const answer = await response.json();
  assert.equal(response.status, 400);
  assert.equal(answer.code, "invalid_argument");
  assert.match(answer.message, /exceeds 1048576 bytes/);
  assert.ok(pulled() > MAX_OBSERVE_REQUEST_BYTES, "the cap, not an early close, refused it");
  assert.ok(pulled() < total / 4, `the server read ${pulled()} of ${total} bytes`);
});
