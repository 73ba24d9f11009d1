// Machine RPC across releases (docs/rpc.md, rules 2, 3 and 6), over real unix sockets:
// a newer client adds an optional request field this daemon does not know, and a newer daemon adds answer fields
// this client does not know; both sides keep working. Unknown routes are still refused by capability, and a known
// field of the wrong type is still refused naming it.
import { deepEqual, equal, match, ok } from "node:assert/strict";
import { containerSpec, observedOf } from "../deploy/testing/mod.ts";
import type { RpcHandlers } from "./app.ts";
import { CAPABILITIES, CATALOG } from "./catalog.ts";
import { connectMachine, type MachineClient } from "./client.ts";
import type { ObservedContainerWire } from "./container_routes.ts";
import { RpcError } from "./errors.ts";
import { PROTOCOL_MAJOR } from "./route.ts";
import { startTestDaemon } from "./test_daemon.ts";

const CONTRACT = {
  "machine_id": "m1",
  "machine_name": "one",
  "protocol_major": PROTOCOL_MAJOR,
  "daemon_version": "0.1.0",
  capabilities: [CAPABILITIES.describeContract, CAPABILITIES.listContainers, CAPABILITIES.stopContainer],
};

const NOW = "2026-01-01T00:00:00.000Z";

const CONTAINER: ObservedContainerWire = observedOf(
  containerSpec({ name: "shop-web-0", creationKey: "ck1", deployment: "d1", slot: "0", image: "busybox" }),
  { id: "c1", "spec_digest": "sd1", "image_id": "sha256:1" },
);

/** A daemon of `handlers` on a unix socket in a fresh directory, and a client of this release attached to it. */
async function serve(
  handlers: RpcHandlers,
): Promise<{ client: MachineClient; socket: string } & AsyncDisposable> {
  const daemon = await startTestDaemon(handlers);
  const client = connectMachine({ socketPath: daemon.socket, label: "one" });
  return {
    client,
    socket: daemon.socket,
    async [Symbol.asyncDispose](): Promise<void> {
      client.close();
      await daemon[Symbol.asyncDispose]();
    },
  };
}

/** One raw POST on the socket, as a client of another release would send it. */
async function post(
  socket: string,
  capability: string,
  body: unknown,
): Promise<[number, Record<string, unknown>]> {
  using http = Deno.createHttpClient({ proxy: { transport: "unix", path: socket } });
  const response = await fetch(`http://localhost/rpc/${capability}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    client: http,
  });
  return [response.status, await response.json()];
}

Deno.test("a newer client's optional request fields reach this daemon harmlessly; known fields keep their types", async () => {
  const seen: unknown[] = [];
  await using daemon = await serve({
    describeContract: () => Promise.resolve(CONTRACT),
    listContainers: (request) => {
      seen.push(request);
      return Promise.resolve({ "machine_id": "m1", "observed_at": NOW, containers: [CONTAINER] });
    },
    stopContainer: (request) => {
      seen.push(request);
      return Promise.resolve({ container: { ...CONTAINER, state: "exited" } });
    },
  });

  // The newer client's catalog has fields this release does not: through the typed client, and raw.
  const listed = await daemon.client.listContainers({ project: "shop", "sort_by": "name" } as never);
  deepEqual(listed.containers.map((c) => c.id), ["c1"]);
  const [status, body] = await post(daemon.socket, CAPABILITIES.stopContainer, {
    "protocol_major": PROTOCOL_MAJOR,
    id: "c1",
    "grace_seconds": 2,
    "reason": { "by": "operator", "note": "drain" },
  });
  equal(status, 200, JSON.stringify(body));
  equal((body.container as { state: string }).state, "exited");
  // The handlers saw only the fields this release knows.
  deepEqual(seen, [{ project: "shop" }, { id: "c1", "grace_seconds": 2 }]);

  // Strict on the types of known fields: the refusal names the field and the capability.
  const [badStatus, bad] = await post(daemon.socket, CAPABILITIES.stopContainer, {
    "protocol_major": PROTOCOL_MAJOR,
    id: "c1",
    "grace_seconds": "soon",
    "reason": "drain",
  });
  equal(badStatus, 400);
  const error = bad.error as { code: string; message: string; details: Record<string, unknown> };
  equal(error.code, "invalid_argument");
  deepEqual(error.details, { capability: CAPABILITIES.stopContainer, field: "grace_seconds" });
  match(error.message, /field "grace_seconds"/);
  equal(seen.length, 2, "a refused request never reaches its handler");
});

Deno.test("a newer client's new route is refused by capability, and the client says which", async () => {
  await using daemon = await serve({ describeContract: () => Promise.resolve(CONTRACT) });
  const [status, body] = await post(daemon.socket, "ployz.container.teleport.v1", {
    "protocol_major": PROTOCOL_MAJOR,
    id: "c1",
  });
  equal(status, 404);
  const error = body.error as { code: string; details: Record<string, unknown> };
  equal(error.code, "unsupported");
  deepEqual(error.details, { capability: "ployz.container.teleport.v1" });
  // A catalogued route without a handler here is refused the same way, before its request is read.
  const [, unserved] = await post(daemon.socket, CAPABILITIES.ensureContainer, { "protocol_major": 1 });
  deepEqual((unserved.error as { details: unknown }).details, { capability: CAPABILITIES.ensureContainer });
  const refused = await daemon.client.requireCapability(CAPABILITIES.ensureContainer).catch((e) => e);
  ok(refused instanceof RpcError);
  equal(refused.code, "unsupported");
  equal(refused.details.capability, CAPABILITIES.ensureContainer);
});

Deno.test("a newer daemon's extra answer fields reach this client harmlessly and are kept", async () => {
  // The newer daemon's answers, as its handlers return them: more fields at every level, and a capability this
  // release has never heard of.
  await using daemon = await serve({
    describeContract: () =>
      Promise.resolve({
        ...CONTRACT,
        capabilities: [...CONTRACT.capabilities, "ployz.container.teleport.v1"],
        region: "eu-west",
      } as never),
    listContainers: () =>
      Promise.resolve({
        "machine_id": "m1",
        "observed_at": NOW,
        containers: [{
          ...CONTAINER,
          "restart_count": 3,
          ports: [{ ...portOf(8080), "protocol_hint": "h2" }],
        }],
        "next_page": "abc",
      } as never),
  });
  const contract = await daemon.client.describeContract();
  equal(contract.machine_id, "m1");
  ok(contract.capabilities.includes("ployz.container.teleport.v1"));
  equal((contract as unknown as Record<string, unknown>).region, "eu-west");
  await daemon.client.requireCapability(CAPABILITIES.listContainers);
  const listed = await daemon.client.listContainers({});
  equal(listed.containers.length, 1);
  const [container] = listed.containers;
  equal(container.id, "c1");
  equal(container.ports[0].host_port, 8080);
  equal((container as unknown as Record<string, unknown>).restart_count, 3);
  equal((listed as unknown as Record<string, unknown>).next_page, "abc");
});

function portOf(hostPort: number): ObservedContainerWire["ports"][number] {
  return { "container_port": 80, protocol: "tcp", "host_ip": "127.0.0.1", "host_port": hostPort };
}

Deno.test("ployz.machine.upgrade.v1 alone refuses fields it does not know: it fails closed", async () => {
  let reached = false;
  await using daemon = await serve({
    upgradeMachine: () => {
      reached = true;
      return Promise.reject(new Error("not reached"));
    },
  });
  const [status, body] = await post(daemon.socket, CAPABILITIES.upgradeMachine, {
    "protocol_major": PROTOCOL_MAJOR,
    "request_key": "k1",
    source: "https://example.invalid/releases",
  });
  equal(status, 400);
  const error = body.error as { code: string; message: string; details: Record<string, unknown> };
  equal(error.code, "invalid_argument");
  equal(error.details.field, "source");
  match(error.message, /field "source": unknown field/);
  equal(reached, false);
});

Deno.test("every request reader but ployz.machine.upgrade.v1 ignores a field it does not know", () => {
  const refusing: string[] = [];
  for (const [name, route] of Object.entries(CATALOG)) {
    const parsed = route.request.safeParse({ "field_of_a_newer_client": 1 });
    if (!parsed.success && parsed.error.issues.some((issue) => issue.code === "unrecognized_keys")) {
      refusing.push(name);
    }
  }
  deepEqual(refusing, ["upgradeMachine"]);
});
