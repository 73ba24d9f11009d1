import { deepEqual, equal, match } from "node:assert/strict";
import { connectMachine, createRpcApp, RpcError, viaEntry } from "../rpc/mod.ts";
import { createForwarder, type ForwardTarget } from "./forward.ts";

// A target Machine's RPC app on a real TCP listener; the Entry Machine's app on an in-process transport that
// hands `/rpc/via/...` to the forwarder, as the daemon's socket server does.
function target(): { server: Deno.HttpServer<Deno.NetAddr>; port: number } {
  const app = createRpcApp({
    describeContract: () =>
      Promise.resolve({
        "machine_id": "m2id",
        "machine_name": "m2",
        "protocol_major": 1,
        "daemon_version": "0.0.0-test",
        capabilities: ["ployz.machine.describe_contract.v1", "ployz.observe.tail_logs.v1"],
      }),
    tailLogs: (req) =>
      Promise.resolve(
        new ReadableStream({
          start(c): void {
            c.enqueue(new TextEncoder().encode(`line one of ${req.selector.container}\n`));
            c.enqueue(new TextEncoder().encode("line two\n"));
            c.close();
          },
        }),
      ),
    stopContainer: () =>
      Promise.reject(
        new RpcError("conflict", 'Refusing to stop container "x": not owned', { details: { x: 1 } }),
      ),
  });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (r) => app.fetch(r));
  return { server, port: server.addr.port };
}

function entryClient(targets: Record<string, ForwardTarget>, observed: string[]) {
  const entryApp = createRpcApp({});
  const forwarder = createForwarder({
    self: () => ({ id: "m1id", name: "m1" }),
    resolve: (id) => targets[id],
    observe: (id) => {
      observed.push(id);
      return Promise.resolve(`"m1" observes it down, last handshake 2000-01-01T00:00:00.000Z (99 s ago)`);
    },
    local: (request, signal) => entryApp.fetch(request, signal),
    connectMs: 500,
  });
  return connectMachine({
    label: "entry",
    fetch: (request) =>
      new URL(request.url).pathname.startsWith("/rpc/via/")
        ? forwarder.serveVia(request, new AbortController().signal)
        : Promise.resolve(entryApp.fetch(request)),
  });
}

Deno.test("a forwarded call answers with the target's own JSON, stream and error", async () => {
  const t = target();
  try {
    const observed: string[] = [];
    using entry = entryClient({ m2id: { name: "m2", hostname: "127.0.0.1", port: t.port } }, observed);
    using m2 = viaEntry(entry, "m2id", { name: "m2" });
    const contract = await m2.describeContract();
    equal(contract.machine_name, "m2");
    await m2.requireCapability("ployz.observe.tail_logs.v1");

    const stream = await m2.tailLogs({ selector: { container: "abc" } });
    equal(await new Response(stream).text(), "line one of abc\nline two\n");

    const refused = await m2.stopContainer({ id: "x" }).then(() => undefined, (e) => e);
    equal(refused instanceof RpcError, true);
    equal(refused.code, "conflict");
    equal(refused.message, 'Refusing to stop container "x": not owned');
    deepEqual(refused.details, { capability: "ployz.container.stop.v1", x: 1 });

    // A route the target does not serve is the target's refusal, naming the capability.
    const unserved = await m2.status().then(() => undefined, (e) => e);
    equal(unserved.code, "unsupported");
    equal(unserved.details.capability, "ployz.machine.status.v1");
    deepEqual(observed, [], "a reachable target needs no observation");
  } finally {
    await t.server.shutdown();
  }
});

Deno.test("an unknown Machine is not_found and an unreachable one unavailable with the Entry's observation", async () => {
  // A port that was just free: connecting is refused at once.
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const closedPort = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const observed: string[] = [];
  using entry = entryClient({ m3id: { name: "m3", hostname: "127.0.0.1", port: closedPort } }, observed);

  using unknown = viaEntry(entry, "nope");
  const missing = await unknown.describeContract().then(() => undefined, (e) => e);
  equal(missing.code, "not_found");
  match(missing.message, /Entry Machine "m1" holds no row for it/);
  equal(missing.details.capability, "ployz.machine.describe_contract.v1");

  using m3 = viaEntry(entry, "m3id", { name: "m3" });
  const down = await m3.listContainers({}).then(() => undefined, (e) => e);
  equal(down.code, "unavailable");
  match(
    down.message,
    /^Cannot reach Machine "m3" \(m3id\) from Entry Machine "m1" at 127\.0\.0\.1:\d+: .+; "m1" observes it down, last handshake/,
  );
  equal(down.details.capability, "ployz.container.list.v1");
  equal(down.details.machine_id, "m3id");
  deepEqual(observed, ["m3id"]);
});

Deno.test("a call via the Entry Machine itself is answered locally", async () => {
  using entry = entryClient({}, []);
  using self = viaEntry(entry, "m1id");
  const refused = await self.status().then(() => undefined, (e) => e);
  // The Entry's own app serves no handlers here: the local answer, not a relay.
  equal(refused.code, "unsupported");
  equal(refused.details.capability, "ployz.machine.status.v1");
});

Deno.test("a malformed forwarding path is refused with invalid_argument", async () => {
  const forwarder = createForwarder({
    self: () => ({ id: "m1id", name: "m1" }),
    resolve: () => undefined,
    observe: () => Promise.resolve(""),
    local: () => new Response(),
  });
  const answer = await forwarder.serveVia(
    new Request("http://localhost/rpc/via/only-one-part", { method: "POST", body: "{}" }),
    new AbortController().signal,
  );
  equal(answer.status, 400);
  equal((await answer.json()).error.code, "invalid_argument");
});
