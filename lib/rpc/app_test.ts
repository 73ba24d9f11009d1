import { deepEqual, equal, match, ok } from "node:assert/strict";
import { advertisedCapabilities, createRpcApp, type RpcHandlers } from "./app.ts";
import { CAPABILITIES } from "./catalog.ts";
import { RpcError } from "./errors.ts";

const STATUS = {
  machine: { id: "m1", name: "one", phase: "uninitialized" },
  docker: { reachable: true },
  "observed_at": "2026-01-01T00:00:00Z",
};

function post(capability: string, body: unknown): RequestInit & { path: string } {
  return {
    path: `/rpc/${capability}`,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  };
}

async function call(
  handlers: RpcHandlers,
  capability: string,
  body: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const { path, ...init } = post(capability, body);
  const response = await createRpcApp(handlers).request(path, init);
  return { status: response.status, json: await response.json() };
}

function errorOf(
  json: Record<string, unknown>,
): { code: string; message: string; details: Record<string, unknown> } {
  return json.error as { code: string; message: string; details: Record<string, unknown> };
}

Deno.test("createRpcApp serves a handled route inside the envelope", async () => {
  const { status, json } = await call({ status: () => Promise.resolve(STATUS) }, CAPABILITIES.status, {
    "protocol_major": 1,
  });
  equal(status, 200);
  deepEqual(json, STATUS);
});

Deno.test("createRpcApp refuses an unknown capability with details.capability", async () => {
  const { status, json } = await call({}, "ployz.machine.teleport.v1", { "protocol_major": 1 });
  equal(status, 404);
  equal(errorOf(json).code, "unsupported");
  deepEqual(errorOf(json).details, { capability: "ployz.machine.teleport.v1" });
});

Deno.test("createRpcApp refuses a retired capability, naming it and its replacement", async () => {
  const { status, json } = await call({}, "ployz.container.logs.v1", { "protocol_major": 1, id: "x" });
  equal(status, 404);
  equal(errorOf(json).code, "unsupported");
  match(
    String(errorOf(json).message),
    /"ployz\.container\.logs\.v1" was retired; use ployz\.observe\.log_history\.v1/,
  );
  deepEqual(errorOf(json).details, { capability: "ployz.container.logs.v1" });
  ok(
    !advertisedCapabilities({ tailLogs: () => Promise.reject(new Error("not reached")) }).includes(
      "ployz.container.logs.v1",
    ),
  );
});

Deno.test("createRpcApp refuses a catalogued route it has no handler for, and does not advertise it", async () => {
  const handlers: RpcHandlers = { status: () => Promise.resolve(STATUS) };
  const { status, json } = await call(handlers, CAPABILITIES.init, { "protocol_major": 1 });
  equal(status, 404);
  deepEqual(errorOf(json).details, { capability: CAPABILITIES.init });
  deepEqual(advertisedCapabilities(handlers), [CAPABILITIES.status]);
});

Deno.test("createRpcApp refuses another protocol major with the major it speaks", async () => {
  const { json } = await call({ status: () => Promise.resolve(STATUS) }, CAPABILITIES.status, {
    "protocol_major": 2,
  });
  equal(errorOf(json).code, "unsupported");
  deepEqual(errorOf(json).details, { capability: CAPABILITIES.status, "protocol_major": 1 });
});

Deno.test("createRpcApp names the field of a malformed request", async () => {
  const handlers: RpcHandlers = {
    listContainers: () => Promise.reject(new Error("not reached")),
    stopContainer: () => Promise.reject(new Error("not reached")),
  };
  const cases: [string, unknown, string][] = [
    [CAPABILITIES.listContainers, { "protocol_major": 1, project: 7 }, "project"],
    [CAPABILITIES.listContainers, { "protocol_major": 1, projct: "x", service: ["web"] }, "service"],
    [CAPABILITIES.listContainers, { project: "x" }, "protocol_major"],
    [CAPABILITIES.stopContainer, { "protocol_major": 1, id: "c", "grace_seconds": "soon" }, "grace_seconds"],
    [CAPABILITIES.stopContainer, { "protocol_major": 1 }, "id"],
  ];
  for (const [capability, body, field] of cases) {
    const { status, json } = await call(handlers, capability, body);
    equal(status, 400);
    const error = errorOf(json);
    equal(error.code, "invalid_argument");
    equal(error.details.field, field);
    equal(error.details.capability, capability);
    match(error.message, new RegExp(`field "${field}"`));
  }
  const notJson = await call(handlers, CAPABILITIES.listContainers, "{nope");
  equal(errorOf(notJson.json).code, "invalid_argument");
  match(errorOf(notJson.json).message, /not JSON/);
});

Deno.test("createRpcApp keeps a handler's code and adds the capability; hides internal errors", async () => {
  const seen: unknown[] = [];
  const app = createRpcApp({
    startContainer: () =>
      Promise.reject(new RpcError("conflict", "Refusing", { details: { container: "c" } })),
    stopContainer: () => Promise.reject(new Error("secret internals")),
    removeContainer: () => Promise.resolve({ removed: "yes" } as never),
  }, { onInternalError: (_c, e) => seen.push(e) });
  const ask = async (capability: string) => {
    const { path, ...init } = post(capability, { "protocol_major": 1, id: "c" });
    const response = await app.request(path, init);
    return { status: response.status, error: errorOf(await response.json()) };
  };
  const conflict = await ask(CAPABILITIES.startContainer);
  equal(conflict.status, 409);
  deepEqual(conflict.error.details, { container: "c", capability: CAPABILITIES.startContainer });
  const internal = await ask(CAPABILITIES.stopContainer);
  equal(internal.status, 500);
  equal(internal.error.code, "internal");
  ok(!internal.error.message.includes("secret"));
  const malformed = await ask(CAPABILITIES.removeContainer);
  equal(malformed.error.code, "internal");
  equal(seen.length, 2);
});

Deno.test("createRpcApp refuses other methods and paths with details.capability", async () => {
  const app = createRpcApp({ status: () => Promise.resolve(STATUS) });
  const get = await app.request(`/rpc/${CAPABILITIES.status}`);
  equal(get.status, 404);
  deepEqual(errorOf(await get.json()).details, { capability: CAPABILITIES.status });
  const other = await app.request("/metrics", { method: "POST" });
  equal(errorOf(await other.json()).code, "unsupported");
});
