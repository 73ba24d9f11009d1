import assert from "node:assert/strict";
import { RpcError } from "../rpc/mod.ts";
import { openStore } from "../store/mod.ts";
import { VolumeError } from "../volume/mod.ts";
import { asRpc, copyFromWire, copyToWire, publishRows } from "./volume_wire.ts";

Deno.test("copies round-trip through the wire; a Writer without an epoch is at epoch 0", () => {
  for (
    const copy of [{ role: "none" }, { role: "mirror", snapshot: "g1-a" }, {
      role: "writer",
      epoch: 3,
    }] as const
  ) {
    assert.deepEqual(copyFromWire(copyToWire(copy)), copy);
  }
  assert.deepEqual(copyFromWire({ role: "writer" }), { role: "writer", epoch: 0 });
  const mapped = asRpc(new VolumeError("conflict", "held elsewhere"));
  assert.ok(mapped instanceof RpcError && mapped.code === "conflict");
  const other = new Error("x");
  assert.equal(asRpc(other), other);
});

Deno.test("rows: one per held copy, rewritten only when more than the observation time changed, gone when not held", () => {
  const store = openStore({ path: ":memory:", siteId: "m1", clusterId: "c" });
  try {
    const writer = {
      name: "db",
      role: "writer" as const,
      epoch: 1,
      snapshots: ["g1-a", "g2-b", "g3-c"],
      project: "p",
    };
    const mirror = { name: "cache", role: "mirror" as const, snapshot: "g2-b", snapshots: ["g2-b"] };
    publishRows(store, "m1", [writer, mirror], "2026-01-01T00:00:00.000Z");
    assert.deepEqual(store.volumes.list().map((r) => r.id).sort(), ["cache@m1", "db@m1"]);
    assert.deepEqual(store.volumes.get("db@m1")?.snapshots, ["g2-b", "g3-c"], "the newest two Snapshots");
    publishRows(store, "m1", [writer], "2026-01-01T00:01:00.000Z");
    assert.equal(
      store.volumes.get("db@m1")?.observed_at,
      "2026-01-01T00:00:00.000Z",
      "unchanged: not rewritten",
    );
    assert.equal(store.volumes.get("cache@m1"), undefined, "a copy no longer held loses its row");
    publishRows(store, "m1", [{ ...writer, epoch: 2 }], "2026-01-01T00:02:00.000Z");
    assert.equal(store.volumes.get("db@m1")?.epoch, 2);
  } finally {
    store.close();
  }
});
