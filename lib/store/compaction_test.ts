import assert from "node:assert/strict";
import { openStore, type Store } from "./store.ts";
import { SyncAgent } from "./sync_agent.ts";
import { serveStore } from "./test_support.ts";

// Live rows only, with their winners: what every replica must agree on whatever each has compacted.
function liveRows(store: Store): string {
  const tables = JSON.parse(store.dump()).tables as Record<string, unknown[][]>;
  return JSON.stringify(Object.fromEntries(
    Object.entries(tables).map(([name, rows]) => [name, rows.filter((r) => r[1] === 0)]),
  ));
}

function logSize(store: Store): number {
  return JSON.parse(store.dump()).log;
}

Deno.test("compaction keeps every live row and each site's latest change, and removes superseded changes and old tombstones", () => {
  using store = openStore({ path: ":memory:", siteId: "m1", clusterId: "cluster-1" });
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 10; i++) store.cluster.put({ name: `k${i}`, value: round });
  }
  store.cluster.delete("k9");
  store.cluster.put({ name: "last", value: 0 });
  const before = liveRows(store);
  assert.equal(logSize(store), 52);
  // Nothing is older than a long horizon.
  assert.deepEqual(store.compact({ horizonMs: 60_000 }), { superseded: 0, tombstones: 0 });
  const removed = store.compact({ horizonMs: 0 });
  assert.deepEqual(removed, { superseded: 41, tombstones: 1 });
  assert.equal(logSize(store), 10);
  assert.equal(liveRows(store), before);
  assert.equal(store.cluster.get("k3")?.value, 4);
  assert.equal(store.cluster.get("k9"), undefined);
  assert.deepEqual(store.floors(), { m1: 51 });
  // Numbering goes on after the compacted tail, also after a reopen.
  assert.equal(store.cluster.put({ name: "k0", value: 9 }).version, 53);
});

Deno.test("a compacted version pushed again is a duplicate and brings no row back", () => {
  using a = openStore({ path: ":memory:", siteId: "m1", clusterId: "cluster-1" });
  using b = openStore({ path: ":memory:", siteId: "m2", clusterId: "cluster-1" });
  const put = a.cluster.put({ name: "gone", value: 1 });
  const tomb = a.cluster.delete("gone");
  b.applyChanges([put, tomb, a.cluster.put({ name: "after", value: 1 })]);
  b.compact({ horizonMs: 0 });
  assert.equal(logSize(b), 1);
  const again = b.applyChanges([put]);
  assert.deepEqual(again, { applied: 0, duplicates: 1, rejected: [] });
  assert.equal(b.cluster.get("gone"), undefined);
});

Deno.test("a replica behind a peer's compaction rejoins by a full sync and converges", async () => {
  const a = serveStore("m1");
  const b = serveStore("m2");
  const c = serveStore("m3");
  try {
    // Everyone starts level.
    for (let i = 0; i < 20; i++) a.store.cluster.put({ name: `k${i}`, value: 0 });
    c.store.machines.put({ id: "m3", name: "three" });
    for (const s of [b, c]) await new SyncAgent(s.store, { peers: () => [] }).syncOnce(a.url);
    await new SyncAgent(b.store, { peers: () => [] }).syncOnce(c.url);

    // c is cut off. Meanwhile a and b rewrite and delete rows, and compact past it.
    for (let i = 0; i < 20; i++) a.store.cluster.put({ name: `k${i}`, value: 1 });
    for (let i = 0; i < 5; i++) a.store.cluster.delete(`k${i}`);
    b.store.cluster.put({ name: "from-b", value: 2 });
    await new SyncAgent(b.store, { peers: () => [] }).syncOnce(a.url);
    a.store.compact({ horizonMs: 0 });
    b.store.compact({ horizonMs: 0 });
    assert.ok((a.store.floors().m1 ?? 0) > (c.store.vector().m1?.c ?? 0), "a compacted past c's vector");
    // c wrote while cut off: its own write must survive the full sync.
    c.store.machines.put({ id: "m3", name: "three-renamed" });

    const events: string[] = [];
    // The Cluster's horizon, which its peers compacted with: 0 here.
    const agent = new SyncAgent(c.store, {
      peers: () => [],
      horizonMs: 0,
      onEvent: (e) => events.push(e.type),
    });
    await agent.syncOnce(a.url);
    assert.ok(events.includes("full_sync"), `no full sync: ${events.join(", ")}`);
    for (let i = 0; i < 5; i++) assert.equal(c.store.cluster.get(`k${i}`), undefined, `k${i} came back`);
    assert.equal(c.store.cluster.get("k10")?.value, 1);
    assert.equal(c.store.cluster.get("from-b")?.value, 2);
    assert.equal(c.store.machines.get("m3")?.name, "three-renamed");

    // Ordinary anti-entropy afterwards brings all three level.
    for (const [from, to] of [[a, c], [b, c], [c, a], [c, b], [a, b]] as const) {
      await new SyncAgent(from.store, { peers: () => [] }).syncOnce(to.url);
    }
    for (const s of [a, b, c]) s.store.compact({ horizonMs: 0 });
    assert.equal(liveRows(c.store), liveRows(a.store));
    assert.equal(liveRows(b.store), liveRows(a.store));
    assert.deepEqual(c.store.vector(), a.store.vector());
    assert.ok(c.store.caughtUpWith(a.store.vector()));
  } finally {
    await Promise.all([a, b, c].map((s) => s.close()));
  }
});

Deno.test("a stale name-keyed write from a Machine cut off past the horizon loses to a compacted delete", () => {
  let now = Date.parse("2026-01-01T00:00:00Z");
  const clock = (): number => now;
  using a = openStore({ path: ":memory:", siteId: "m1", clusterId: "cluster-1", now: clock });
  using b = openStore({ path: ":memory:", siteId: "m2", clusterId: "cluster-1", now: clock });
  using c = openStore({ path: ":memory:", siteId: "m3", clusterId: "cluster-1", now: clock });
  // m3 writes the name while cut off; nobody hears of it for eight days.
  const stale = c.cluster.put({ name: "shared", value: "from m3" });
  now += 1000;
  b.applyChanges([a.cluster.put({ name: "shared", value: "from m1" })]);
  now += 1000;
  b.applyChanges([a.cluster.delete("shared"), a.cluster.put({ name: "after", value: 1 })]);
  now += 8 * 24 * 3600_000;
  assert.deepEqual(b.compact({ horizonMs: 7 * 24 * 3600_000 }), { superseded: 1, tombstones: 1 });
  assert.equal(logSize(b), 1);
  assert.deepEqual(b.applyChanges([stale]), { applied: 1, duplicates: 0, rejected: [] });
  assert.equal(b.cluster.get("shared"), undefined, "the stale write brought the deleted row back");
});

Deno.test("compaction keeps each site's latest change even when superseded or a tombstone", () => {
  let now = Date.parse("2026-01-01T00:00:00Z");
  const clock = (): number => now;
  using a = openStore({ path: ":memory:", siteId: "m1", clusterId: "cluster-1", now: clock });
  using b = openStore({ path: ":memory:", siteId: "m2", clusterId: "cluster-1", now: clock });
  b.applyChanges([a.cluster.put({ name: "k", value: 1 }), a.cluster.delete("k")]);
  b.cluster.put({ name: "j", value: 1 });
  now += 1000;
  b.applyChanges([a.cluster.put({ name: "j", value: 2 })]);
  now += 1000;
  // m1's latest is a live write; m2's only change is superseded by it, m1's tombstone is old: m2's stays.
  assert.deepEqual(b.compact({ horizonMs: 0 }), { superseded: 1, tombstones: 1 });
  assert.deepEqual(b.floors(), { m1: 2 });
  assert.equal(logSize(b), 2);
});

Deno.test("a Machine that never wrote does not name itself in its vector after compacting", () => {
  using a = openStore({ path: ":memory:", siteId: "m1", clusterId: "cluster-1" });
  using b = openStore({ path: ":memory:", siteId: "m2", clusterId: "cluster-1" });
  b.applyChanges([a.cluster.put({ name: "k", value: 1 })]);
  b.compact({ horizonMs: 0 });
  assert.deepEqual(Object.keys(b.vector()), ["m1"]);
});
