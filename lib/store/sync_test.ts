import assert from "node:assert/strict";
import { StoreError } from "./errors.ts";
import { CLUSTER_HEADER } from "./protocol.ts";
import { openStore } from "./store.ts";
import { SyncAgent } from "./sync_agent.ts";
import { serveStore } from "./test_support.ts";

async function post(url: string, body: string, cluster?: string): Promise<{ status: number; json: unknown }> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (cluster !== undefined) headers[CLUSTER_HEADER] = cluster;
  const response = await fetch(url, { method: "POST", headers, body });
  return { status: response.status, json: await response.json() };
}

Deno.test("syncOnce pulls what is missing and pushes what the peer lacks", async () => {
  await using a = serveStore("m1");
  await using b = serveStore("m2");
  for (let i = 0; i < 30; i++) a.store.cluster.put({ name: `k${i}`, value: i });
  b.store.machines.put({ id: "m2", name: "two" });
  const agent = new SyncAgent(b.store, { peers: () => [a.url], pageLimit: 7 });
  const result = await agent.syncOnce(a.url);
  assert.deepEqual(result, { received: 30, sent: 1, rejected: [] });
  assert.equal(a.store.dump(), b.store.dump());
  assert.deepEqual(await agent.syncOnce(a.url), { received: 0, sent: 0, rejected: [] });
  assert.ok(b.store.caughtUpWith(await agent.peerVector(a.url)));
  const caught = await post(
    `${a.url}/store/v1/caught-up`,
    JSON.stringify({ vector: b.store.vector() }),
    "cluster-1",
  );
  assert.deepEqual(caught.json, { site: "m1", caught_up: true });
});

Deno.test("a started agent pushes new changes to peers at once", async () => {
  const a = serveStore("m1");
  const b = serveStore("m2");
  const agent = new SyncAgent(a.store, { peers: () => [b.url], antiEntropyMs: 60_000, pushDelayMs: 1 });
  try {
    agent.start();
    const arrived = (async () => {
      for await (const changes of b.store.watch()) if (changes.tables.serving_pointers) return;
    })();
    a.store.servingPointers.put({ project: "p", service: "s", deployment: "d1" });
    await arrived;
    assert.equal(b.store.servingPointers.get("p/s")?.deployment, "d1");
    assert.equal(agent.stats.changesPushed, 1);
  } finally {
    await agent.stop();
    await a.close();
    await b.close();
  }
});

Deno.test("a peer from another cluster, or naming none, is refused", async () => {
  await using a = serveStore("m1", "cluster-1");
  await using other = serveStore("m9", "cluster-2");
  const body = JSON.stringify({ site: "m9", changes: [] });
  const missing = await post(`${a.url}/store/v1/push`, body);
  assert.equal(missing.status, 401);
  assert.equal((missing.json as { code: string }).code, "unauthenticated");
  const wrong = await post(`${a.url}/store/v1/push`, body, "cluster-2");
  assert.equal(wrong.status, 409);
  assert.equal((wrong.json as { code: string }).code, "conflict");
  // The Cluster id is what a peer needs to push: a refusal never tells it.
  assert.doesNotMatch(JSON.stringify(wrong.json), /cluster-1/);
  const probe = await fetch(`${a.url}/store/v1/vector`, { headers: { [CLUSTER_HEADER]: "guess" } });
  assert.equal(probe.status, 409);
  assert.equal(probe.headers.get(CLUSTER_HEADER), null);
  assert.doesNotMatch(await probe.text(), /cluster-1/);
  const agent = new SyncAgent(other.store, { peers: () => [a.url] });
  await assert.rejects(
    agent.syncOnce(a.url),
    (e) => e instanceof StoreError && e.code === "conflict" && !/cluster-1/.test(e.message),
  );
});

Deno.test("a push with malformed changes applies the rest and lists the rejects", async () => {
  await using a = serveStore("m1");
  using source = openStore({ path: ":memory:", siteId: "m2", clusterId: "cluster-1" });
  const good = source.cluster.put({ name: "x", value: 1 });
  const huge = { ...good, version: 2, body: JSON.stringify({ name: "y", value: "z".repeat(300_000) }) };
  const changes = [{ ...good, hlc: "soon" }, good, huge, "nonsense"];
  const reply = await post(`${a.url}/store/v1/push`, JSON.stringify({ site: "m2", changes }), "cluster-1");
  assert.equal(reply.status, 200);
  const result = reply.json as { applied: number; rejected: { index: number; reason: string }[] };
  assert.equal(result.applied, 1);
  assert.deepEqual(result.rejected.map((r) => r.index), [0, 2, 3]);
  assert.equal(a.store.cluster.get("x")?.value, 1);
  const notJson = await post(`${a.url}/store/v1/push`, "{", "cluster-1");
  assert.equal(notJson.status, 400);
  const badEnvelope = await post(
    `${a.url}/store/v1/sync`,
    JSON.stringify({ site: "m2", vector: 5 }),
    "cluster-1",
  );
  assert.equal(badEnvelope.status, 400);
});
