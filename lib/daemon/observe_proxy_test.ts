// The daemon's observe handlers against real unix sockets: an Observe Store that is absent or that never answers
// is `unavailable` within the deadline, never a hang; its refusals keep their code.
import { equal, match, rejects } from "node:assert/strict";
import { join } from "node:path";
import { RpcError } from "../rpc/mod.ts";
import { observeHandlers, relayTailLine } from "./observe_proxy.ts";

const record = () => ({ id: "m-id", name: "m1", phase: "participating" });
const context = (signal: AbortSignal) => ({ capability: "ployz.observe.log_history.v1", signal });
const request = { selector: { service: "web" }, since: "0", limit: 10 };

function refusedWith(code: string, pattern: RegExp): (error: unknown) => boolean {
  return (error) => {
    if (!(error instanceof RpcError)) throw error;
    equal(error.code, code, error.message);
    match(error.message, pattern);
    return true;
  };
}

Deno.test("an absent Observe Store is unavailable, naming the Machine and the socket", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const handlers = observeHandlers({
      record,
      observeSocket: join(dir, "observe.sock"),
      stopping: new AbortController().signal,
    });
    await rejects(
      handlers.logHistory(request, context(new AbortController().signal)),
      refusedWith("unavailable", /Cannot reach the Observe Store of Machine "m1" at ".*observe\.sock": .+/),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an Observe Store that never answers is unavailable at the deadline; refusals keep their code", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "observe.sock");
  const stop = new AbortController();
  const held: PromiseWithResolvers<void>[] = [];
  const server = Deno.serve({ path, signal: stop.signal, onListen: () => {} }, async (req) => {
    const url = new URL(req.url);
    if (url.pathname.endsWith("/metric_history")) {
      return Response.json({ code: "invalid_argument", message: "Cannot read since", details: {} }, {
        status: 400,
      });
    }
    const wait = Promise.withResolvers<void>();
    held.push(wait);
    await wait.promise;
    return new Response("{}");
  });
  try {
    const handlers = observeHandlers({ record, observeSocket: path, stopping: stop.signal, deadlineMs: 300 });
    const started = Date.now();
    await rejects(
      handlers.logHistory(request, context(new AbortController().signal)),
      refusedWith("unavailable", /The Observe Store of Machine "m1" did not answer within 300 ms/),
    );
    equal(Date.now() - started < 5000, true);
    await rejects(
      handlers.metricHistory({ since: "x" }, context(new AbortController().signal)),
      refusedWith("invalid_argument", /^Cannot read since$/),
    );
  } finally {
    for (const h of held) h.resolve();
    stop.abort();
    await server.finished;
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a relayed tail line names the Machine; heartbeats only when asked; unreadable lines are dropped", () => {
  equal(relayTailLine("", "m1", true), undefined);
  equal(relayTailLine("{not json", "m1", true), undefined);
  equal(relayTailLine(`{"type":"surprise"}`, "m1", true), undefined);
  equal(relayTailLine(`{"type":"heartbeat"}`, "m1", false), undefined);
  equal(relayTailLine(`{"type":"heartbeat"}`, "m1", true), `{"type":"heartbeat"}\n`);
  equal(relayTailLine(`{"type":"note","message":"m"}`, "m1", false), `{"type":"note","message":"m"}\n`);
  const line = relayTailLine(
    JSON.stringify({
      type: "line",
      "machine_id": "a",
      "container_id": "c",
      service: "web",
      deployment: "d",
      stream: "stdout",
      "time_nano": "1",
      text: "hi",
    }),
    "m1",
    false,
  );
  match(line ?? "", /"machine_name":"m1"/);
  match(line ?? "", /"text":"hi"/);
});
