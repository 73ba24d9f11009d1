import assert from "node:assert/strict";
import { join } from "node:path";
import type { Change } from "./change.ts";
import { StoreError } from "./errors.ts";
import { openStore, type Store } from "./store.ts";
import { tempDir } from "../util/testing/mod.ts";

function memory(siteId: string, now?: () => number): Store {
  return openStore({ path: ":memory:", siteId, clusterId: "test", now });
}

function container(id: string, machine: string, extra: Record<string, unknown> = {}) {
  return { id, machine_id: machine, project: "p", service: "web", name: id, image: "img", ...extra };
}

function isStoreError(code: string): (error: unknown) => boolean {
  return (error) => error instanceof StoreError && error.code === code;
}

Deno.test("typed tables put, get, list with filters and delete", () => {
  using store = memory("m1");
  store.containers.put(container("c1", "m1"));
  store.containers.put(container("c2", "m1", { service: "api" }));
  store.machines.put({ id: "m1", name: "one", endpoints: ["1.2.3.4:51820"] });
  assert.equal(store.containers.get("c1")?.service, "web");
  assert.deepEqual(store.containers.list({ project: "p", service: "api" }).map((c) => c.id), ["c2"]);
  assert.deepEqual(store.containers.list({ machine_id: "m1" }).map((c) => c.id), ["c1", "c2"]);
  store.containers.delete("c1");
  assert.equal(store.containers.get("c1"), undefined);
  assert.deepEqual(store.containers.list().map((c) => c.id), ["c2"]);
  assert.throws(() => store.containers.list({ "x') OR 1=1 --": "y" }), isStoreError("invalid_argument"));
  assert.throws(() => store.containers.put({ id: "c3" } as never), isStoreError("invalid_argument"));
});

Deno.test("a local write to another Machine's row is refused", () => {
  using a = memory("m1");
  using b = memory("m2");
  assert.throws(() => a.containers.put(container("c9", "m2")), isStoreError("conflict"));
  assert.throws(() => a.machines.put({ id: "m2", name: "two" }), isStoreError("conflict"));
  assert.throws(() => a.machines.delete("m2"), isStoreError("conflict"));
  assert.throws(() => a.acks.delete("m2/p/s"), isStoreError("conflict"));
  b.applyChanges([a.containers.put(container("c1", "m1"))]);
  // b sees a's row; neither rewriting it as its own nor deleting it is allowed.
  assert.throws(
    () => b.containers.put(container("c1", "m2")),
    /owned by Machine "m1", this is Machine "m2"/,
  );
  assert.throws(() => b.containers.delete("c1"), isStoreError("conflict"));
  assert.throws(() => b.containers.delete("nope"), isStoreError("not_found"));
});

Deno.test("re-applying changes is a no-op and a bad change does not poison its batch", () => {
  using a = memory("m1");
  using b = memory("m2");
  const changes = [
    a.containers.put(container("c1", "m1")),
    a.servingPointers.put({ project: "p", service: "web", deployment: "d1" }),
  ];
  const forged: Change = { ...changes[0], site: "m3", version: 1 };
  const first = b.applyChanges([changes[0], { junk: true }, forged, changes[1]]);
  assert.equal(first.applied, 2);
  assert.deepEqual(first.rejected.map((r) => r.index), [1, 2]);
  assert.match(first.rejected[1].reason, /owned by "m1", written by "m3"/);
  const seq = b.seq;
  const dump = b.dump();
  const again = b.applyChanges(changes);
  assert.deepEqual(again, { applied: 0, duplicates: 2, rejected: [] });
  assert.equal(b.seq, seq);
  assert.equal(b.dump(), dump);
  assert.equal(b.dump(), a.dump());
});

Deno.test("a relayed change past a gap does not move the watermark until the gap fills", () => {
  using a = memory("m1");
  using b = memory("m2");
  const c1 = a.cluster.put({ name: "x", value: 1 });
  const c2 = a.cluster.put({ name: "y", value: 2 });
  const c3 = a.cluster.put({ name: "z", value: 3 });
  b.applyChanges([c3]);
  assert.deepEqual(b.vector().m1, { c: 0, r: [[3, 3]] });
  assert.ok(!b.caughtUpWith(a.vector()));
  assert.deepEqual(a.changesMissingFrom(b.vector()).changes.map((c) => c.version), [1, 2]);
  b.applyChanges([c1]);
  assert.deepEqual(b.vector().m1, { c: 1, r: [[3, 3]] });
  b.applyChanges([c2]);
  assert.deepEqual(b.vector().m1, { c: 3 });
  assert.ok(b.caughtUpWith(a.vector()));
  assert.equal(b.cluster.get("z")?.value, 3);
});

Deno.test("delete then re-put converges in any delivery order", () => {
  let wall = 100;
  using a = memory("m1", () => wall);
  using b = memory("m2", () => wall);
  using c = memory("m3", () => wall);
  const writes = [
    a.servingPointers.put({ project: "p", service: "s", deployment: "d1" }),
    a.servingPointers.delete("p/s"),
    a.servingPointers.put({ project: "p", service: "s", deployment: "d2" }),
  ];
  wall = 50; // b's clock is behind, yet its later write still follows a's it has seen.
  b.applyChanges([writes[1]]);
  const late = b.servingPointers.delete("p/s");
  c.applyChanges([late, writes[2], writes[0], writes[1]]);
  a.applyChanges([late]);
  b.applyChanges([writes[2], writes[0]]);
  for (const store of [a, b]) assert.equal(store.servingPointers.get("p/s"), undefined);
  assert.equal(a.dump(), c.dump());
  assert.equal(b.dump(), c.dump());
});

Deno.test("changesSince reports changed keys and watch wakes on commit", async () => {
  using a = memory("m1");
  using b = memory("m2");
  const start = a.seq;
  a.containers.put(container("c1", "m1"));
  a.servingPointers.put({ project: "p", service: "s", deployment: "d" });
  a.containers.delete("c1");
  const since = a.changesSince(start);
  assert.deepEqual(since.tables, {
    containers: [{ key: "c1", deleted: true }],
    serving_pointers: [{ key: "p/s", deleted: false }],
  });
  assert.deepEqual(a.changesSince(since.seq).tables, {});

  const controller = new AbortController();
  const seen: string[] = [];
  const watching = (async () => {
    for await (const changes of b.watch({ signal: controller.signal })) {
      seen.push(...Object.entries(changes.tables).flatMap(([t, keys]) => keys.map((k) => `${t}:${k.key}`)));
      if (seen.length >= 3) controller.abort();
    }
  })();
  b.applyChanges(a.changesMissingFrom(b.vector()).changes);
  b.machines.put({ id: "m2", name: "two" });
  await watching;
  assert.deepEqual(seen.sort(), ["containers:c1", "machines:m2", "serving_pointers:p/s"]);
  b.applyChanges([]);
  const ended = (async () => {
    for await (const _ of b.watch()) {
      // Ends when the store closes.
    }
  })();
  b.close();
  await ended;
});

Deno.test("a store file keeps its identity, versions and clock across reopen", async () => {
  await using tmp = await tempDir("store_test_");
  const dir = tmp.path;
  const path = join(dir, "store.db");
  const first = openStore({ path, siteId: "m1", clusterId: "c1", busyTimeoutMs: 1000 });
  const before = first.cluster.put({ name: "x", value: 1 });
  first.close();
  assert.throws(() => openStore({ path, siteId: "m1", clusterId: "c2" }), /cluster_id "c1", not "c2"/);
  assert.throws(() => openStore({ path, siteId: "m2", clusterId: "c1" }), isStoreError("conflict"));
  const second = openStore({ path, siteId: "m1", clusterId: "c1", now: () => 0 });
  try {
    const after = second.cluster.put({ name: "x", value: 2 });
    assert.equal(after.version, before.version + 1);
    assert.ok(after.hlc > before.hlc);
    assert.equal(second.cluster.get("x")?.value, 2);
    assert.equal(second.integrityCheck(), "ok");
  } finally {
    second.close();
  }
  assert.throws(
    () => openStore({ path, siteId: "Bad Id", clusterId: "c1" }),
    isStoreError("invalid_argument"),
  );
});

Deno.test("changes for a table this release does not know are kept and relayed", () => {
  using a = memory("m1");
  using b = memory("m2");
  const future: Change = {
    site: "m9",
    version: 1,
    table: "future_things",
    key: "k",
    hlc: "000000000001000000",
    owner: "",
    deleted: false,
    body: '{"k":"v"}',
  };
  assert.equal(a.applyChanges([future]).applied, 1);
  assert.deepEqual(a.vector().m9, { c: 1 });
  b.applyChanges(a.changesMissingFrom(b.vector()).changes);
  assert.deepEqual(b.vector().m9, { c: 1 });
});

Deno.test("a closed store refuses use", () => {
  const a = memory("m1");
  a.close();
  assert.throws(() => a.cluster.get("x"), isStoreError("unavailable"));
});
