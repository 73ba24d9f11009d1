import assert from "node:assert/strict";
import type { ObservedContainerView } from "../deploy/mod.ts";
import { fillIngressSlot, type IngressFillApi } from "./ingress_fill.ts";
import { CodedError } from "../util/mod.ts";

function proxy(id: string, state: string): ObservedContainerView {
  return {
    id,
    project: "ployz-system",
    service: "caddy",
    state,
    "created_at": "2026-01-01T00:00:00Z",
  } as ObservedContainerView;
}

function fakeApi(
  lists: ObservedContainerView[][],
  ensure: () => Promise<ObservedContainerView>,
): IngressFillApi & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    listContainers() {
      calls.push("list");
      return Promise.resolve({ "machine_id": "m", "observed_at": "", containers: lists.shift() ?? [] });
    },
    async ensureContainer() {
      calls.push("ensure");
      return { container: await ensure(), created: true, started: true };
    },
    startContainer(request) {
      calls.push(`start ${request.id}`);
      return Promise.resolve({ container: proxy(request.id, "running") });
    },
  };
}

const slot = { machineId: "m", deployment: "d" };

Deno.test("a fill that lost the creation race to a concurrent fill finds the winner's container", async () => {
  const api = fakeApi(
    [[], [proxy("winner", "running")]],
    () => Promise.reject(new CodedError("conflict", "name in use")),
  );
  assert.deepEqual(await fillIngressSlot(api, slot), {
    action: "running",
    containerId: "winner",
    state: "running",
  });
  assert.deepEqual(api.calls, ["list", "ensure", "list"]);
});

Deno.test("a fill that finds the winner's container not started yet starts it", async () => {
  const api = fakeApi(
    [[], [proxy("winner", "created")]],
    () => Promise.reject(new CodedError("conflict", "name in use")),
  );
  assert.equal((await fillIngressSlot(api, slot)).action, "started");
  assert.deepEqual(api.calls, ["list", "ensure", "list", "start winner"]);
});

Deno.test("a conflict that lasts, or any other error, fails the fill", async () => {
  const conflict = fakeApi([], () => Promise.reject(new CodedError("conflict", "taken")));
  await assert.rejects(fillIngressSlot(conflict, slot), /taken/);
  assert.equal(conflict.calls.filter((c) => c === "ensure").length, 3);
  const other = fakeApi([], () => Promise.reject(new CodedError("unavailable", "gone")));
  await assert.rejects(fillIngressSlot(other, slot), /gone/);
  assert.deepEqual(other.calls, ["list", "ensure"]);
});
