import assert from "node:assert/strict";
import { StoreNode, waitConverged } from "./support/store_cluster.ts";

// Real store processes replicate over HTTP on loopback. One is killed with SIGKILL while it applies a large
// pulled batch; after a restart its file is sound, the batch is absent as a whole, and all replicas converge.
Deno.test("store processes converge after one is killed mid-apply", async () => {
  const dir = await Deno.makeTempDir({ prefix: "store_processes_" });
  const nodes = ["site-a", "site-b", "site-c"].map((site) => new StoreNode(dir, site, "cluster-e2e"));
  const [a, b, c] = nodes;
  try {
    await Promise.all(nodes.map((n) => n.start(dir)));
    const big = 30_000;
    await a.call("/test/write", { count: big, prefix: "big" });
    await b.call("/test/write", { count: 40, prefix: "b" });
    await c.call("/test/write", { count: 40, prefix: "c" });

    // b pulls a's whole log as one batch and is killed as soon as it starts applying it.
    const pulling = b.call("/test/sync", { peer: a.url, limit: 20_000 }).catch((error) => error);
    await b.waitFor("apply_start", 60_000);
    await b.kill("SIGKILL");
    assert.ok((await pulling) instanceof Error, "the pull finished before the kill");

    await b.start(dir);
    const after = await b.call<{ integrity: string; count: number }>("/test/dump");
    assert.equal(after.integrity, "ok");
    assert.equal(after.count, 40, "a partly applied batch is visible after the crash");

    const urls = nodes.map((n) => n.url);
    await Promise.all(
      nodes.map((n) => n.call("/test/start", { peers: urls.filter((u) => u !== n.url), antiEntropyMs: 200 })),
    );
    const final = await waitConverged(nodes, 60_000);
    assert.equal(final.count, big + 80);
    assert.equal(final.integrity, "ok");
  } finally {
    await Promise.all(nodes.map((n) => n.kill()));
    await Deno.remove(dir, { recursive: true });
  }
});
