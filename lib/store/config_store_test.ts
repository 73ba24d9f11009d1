import assert from "node:assert/strict";
import { join } from "node:path";
import { openConfigStore } from "./config_store.ts";
import { StoreError } from "./error.ts";

Deno.test("config store keeps saved state, deployments, allocations and receipts across reopen", async () => {
  const dir = await Deno.makeTempDir({ prefix: "config_store_" });
  try {
    const path = join(dir, "config.db");
    const first = openConfigStore(path);
    first.saveState({
      project: "shop",
      compose: { services: { web: { image: "a" } } },
      sourcePath: "/x/compose.yaml",
      savedAt: "t1",
    });
    first.saveState({
      project: "shop",
      compose: { services: { web: { image: "b" } } },
      sourcePath: "/x/compose.yaml",
      savedAt: "t2",
    });
    first.saveDeployment({
      id: "d1",
      project: "shop",
      createdAt: "2026-01-01",
      status: "running",
      outcome: null,
    });
    first.saveDeployment({
      id: "d1",
      project: "shop",
      createdAt: "2026-01-01",
      status: "done",
      outcome: { m1: "ok" },
    });
    first.saveDeployment({
      id: "d2",
      project: "shop",
      createdAt: "2026-01-02",
      status: "running",
      outcome: null,
    });
    first.recordAllocation({
      subnet: "10.210.1.0/24",
      machineName: "a",
      machineId: "m1",
      state: "saved",
      savedAt: "t1",
    });
    first.recordAllocation({
      subnet: "10.210.1.0/24",
      machineName: "a",
      machineId: "m1",
      state: "published",
      savedAt: "t2",
    });
    first.saveReceipt({ requestKey: "r1", leg: "m1", receipt: { ok: true }, savedAt: "t" });
    assert.throws(
      () => first.saveReceipt({ requestKey: "", leg: "m1", receipt: {}, savedAt: "t" }),
      StoreError,
    );
    first.close();

    const store = openConfigStore(path);
    try {
      assert.deepEqual(store.savedState("shop")?.compose, { services: { web: { image: "b" } } });
      assert.equal(store.savedState("none"), undefined);
      assert.deepEqual(store.savedProjects(), ["shop"]);
      assert.deepEqual(store.deployments("shop").map((d) => [d.id, d.status]), [["d2", "running"], [
        "d1",
        "done",
      ]]);
      assert.deepEqual(store.deployment("d1")?.outcome, { m1: "ok" });
      assert.deepEqual(store.allocations("10.210.1.0/24").map((a) => a.state), ["saved", "published"]);
      assert.deepEqual(store.receipts("r1"), [{
        requestKey: "r1",
        leg: "m1",
        receipt: { ok: true },
        savedAt: "t",
      }]);
    } finally {
      store.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
