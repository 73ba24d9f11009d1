import { deepEqual, equal, match, ok, rejects } from "node:assert/strict";
import { join } from "node:path";
import { createRpcApp } from "./app.ts";
import { CAPABILITIES } from "./catalog.ts";
import { connectMachine } from "./client.ts";
import { RpcError } from "./errors.ts";
import { listenUnix } from "./listen.ts";
import { tempDir } from "../util/testing/mod.ts";

const CONTRACT = {
  "machine_id": "m1",
  "machine_name": "one",
  "protocol_major": 1,
  "daemon_version": "0.1.0",
  capabilities: [CAPABILITIES.describeContract, CAPABILITIES.inspectImage],
};

function inProcess(handlers: Parameters<typeof createRpcApp>[0]) {
  const app = createRpcApp(handlers);
  return connectMachine({ fetch: (request) => Promise.resolve(app.fetch(request)), label: "one" });
}

Deno.test("connectMachine keeps fields a newer daemon adds and requires advertised capabilities", async () => {
  using client = inProcess({
    describeContract: () => Promise.resolve({ ...CONTRACT, "future_field": 7 }),
    inspectImage: () => Promise.resolve({ present: false, "layers": 3 } as never),
  });
  const contract = await client.describeContract();
  equal((contract as unknown as Record<string, unknown>).future_field, 7);
  deepEqual(await client.inspectImage({ ref: "x" }), { present: false, layers: 3 });
  await client.requireCapability(CAPABILITIES.inspectImage);
  const refused = await client.requireCapability(CAPABILITIES.ensureContainer).catch((e) => e);
  ok(refused instanceof RpcError);
  equal(refused.code, "unsupported");
  equal(
    refused.message,
    `Machine "one" does not serve "${CAPABILITIES.ensureContainer}": upgrade its daemon`,
  );
  equal(refused.details.capability, CAPABILITIES.ensureContainer);
});

Deno.test("connectMachine turns error bodies into RpcError and refuses malformed answers", async () => {
  using client = inProcess({
    startContainer: () =>
      Promise.reject(new RpcError("conflict", "Refusing to start", { details: { a: 1 } })),
  });
  const error = await client.startContainer({ id: "c" }).catch((e) => e);
  ok(error instanceof RpcError);
  equal(error.code, "conflict");
  deepEqual(error.details, { a: 1, capability: CAPABILITIES.startContainer });
  using broken = connectMachine({ fetch: () => Promise.resolve(Response.json({ present: "maybe" })) });
  const malformed = await broken.inspectImage({ ref: "x" }).catch((e) => e);
  equal(malformed.code, "internal");
  match(malformed.message, /field "present"/);
});

Deno.test("connectMachine says which socket it could not reach", async () => {
  await using tmp = await tempDir();
  const dir = tmp.path;
  using client = connectMachine({ socketPath: join(dir, "ployz.sock") });
  const error = await client.status().catch((e) => e);
  ok(error instanceof RpcError);
  equal(error.code, "unavailable");
  match(error.message, new RegExp(`Cannot reach the Machine RPC socket "${dir}/ployz.sock"`));
});

Deno.test("listenUnix serves 0660, replaces a stale socket, refuses a live one, and cleans up", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "ployz.sock");
  try {
    // A socket file nobody answers on: what a crashed daemon leaves behind (a clean close would unlink it).
    const crashing = new Deno.Command(Deno.execPath(), {
      args: ["eval", `Deno.listen({ transport: "unix", path: ${JSON.stringify(path)} }); Deno.exit(9)`],
      stdout: "null",
      stderr: "null",
    });
    equal((await crashing.output()).code, 9);
    ok((await Deno.lstat(path)).isSocket, "the stale socket file must exist for this test to mean anything");
    const app = createRpcApp({ describeContract: () => Promise.resolve(CONTRACT) });
    const server = await listenUnix({ path }, app.fetch);
    try {
      equal((await Deno.stat(path)).mode! & 0o777, 0o660);
      await rejects(listenUnix({ path }, app.fetch), (e: RpcError) => e.code === "busy");
      using client = connectMachine({ socketPath: path });
      equal((await client.describeContract()).machine_id, "m1");
    } finally {
      await server.shutdown();
    }
    await rejects(Deno.stat(path), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
