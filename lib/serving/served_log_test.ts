import assert from "node:assert/strict";
import type { Container } from "../store/mod.ts";
import { servingLabels } from "./labels.ts";
import { servedChanges } from "./served_log.ts";

const INGRESS = servingLabels({
  ports: [{
    kind: "ingress",
    hostname: "api.test",
    loadBalancerPort: 80,
    containerPort: 80,
    protocol: "http",
  }],
  caddy: null,
});

function row(name: string, machine: string, over: Partial<Container> = {}): Container {
  return {
    id: `id-${name}`,
    "machine_id": machine,
    project: "p",
    service: "api",
    deployment: "A",
    name,
    image: "i",
    state: "running",
    health: "healthy",
    addresses: ["10.210.1.2"],
    labels: INGRESS,
    ...over,
  };
}

Deno.test("servedChanges says once when a routed Service's serving set changes, and when it serves nothing", () => {
  const a = row("api-1", "machine-one-long-id");
  const b = row("api-2", "machine-two-long-id");
  const first = servedChanges(new Map(), [a, b], [], {});
  assert.deepEqual(first.lines, [
    'serving: the Ingress Proxy sends "p/api" to api-1@machine-, api-2@machine-',
  ]);
  assert.deepEqual(servedChanges(first.next, [a, b], [], {}).lines, []);
  const leaving = servedChanges(first.next, [a, b], [], { stopping: new Set([a.id]) });
  assert.deepEqual(leaving.lines, ['serving: the Ingress Proxy sends "p/api" to api-2@machine-']);
  const none = servedChanges(leaving.next, [a, { ...b, health: "starting" }], [], {
    stopping: new Set([a.id]),
  });
  assert.deepEqual(none.lines, [
    'serving: the Ingress Proxy sends "p/api" to no container: its sites answer 502',
  ]);
});

Deno.test("servedChanges leaves out Services without ingress routes", () => {
  const dnsOnly = row("db-1", "m1", { service: "db", labels: {} });
  assert.deepEqual(servedChanges(new Map(), [dnsOnly], [], {}).lines, []);
});

Deno.test("servedChanges escapes a forged name so it stays on its own line", () => {
  const forged = row("api-1\nployzd serve: forged", "m1");
  const [line] = servedChanges(new Map(), [forged], [], {}).lines;
  assert.equal(line, 'serving: the Ingress Proxy sends "p/api" to api-1\\nployzd serve: forged@m1');
  assert.ok(!line.includes("\n"));
});
