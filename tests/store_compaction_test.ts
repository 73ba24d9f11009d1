import assert from "node:assert/strict";
import { keyFiles, StoreNode, waitConverged } from "./support/store_cluster.ts";

async function fileBytes(path: string): Promise<number> {
  let total = 0;
  for (const suffix of ["", "-wal"]) {
    try {
      total += (await Deno.stat(path + suffix)).size;
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
  return total;
}

/** Three signed store processes m1, m2, m3 of one Cluster on real SQLite files in a fresh directory (not started). */
async function threeNodes(prefix: string, cluster: string): Promise<{ dir: string; nodes: StoreNode[] }> {
  const dir = await Deno.makeTempDir({ prefix });
  const sites = ["m1", "m2", "m3"];
  const keys = await keyFiles(dir, sites);
  return { dir, nodes: sites.map((site, i) => new StoreNode(dir, site, cluster, keys[i])) };
}

/** Starts `n`'s replication with `peers` (every 200 ms, compaction horizon 0). */
function startWith(n: StoreNode, peers: StoreNode[]): Promise<unknown> {
  return n.call("/test/start", { peers: peers.map((p) => p.url), antiEntropyMs: 200, horizonMs: 0 });
}

/** Starts each of `nodes` with all the others as its peers. */
async function startAll(nodes: StoreNode[]): Promise<void> {
  await Promise.all(nodes.map((n) => startWith(n, nodes.filter((p) => p !== n))));
}

/**
 * All three started and peers of each other; m1 writes `count` rows and m3 `count / 6`, and all converge. Then m3
 * stops, m1 rewrites its rows `rounds` times and deletes its first `deletes`.
 */
async function cutOffM3(
  dir: string,
  nodes: StoreNode[],
  { count, rounds, deletes }: { count: number; rounds: number; deletes: number },
): Promise<void> {
  const [m1, _m2, m3] = nodes;
  await Promise.all(nodes.map((n) => n.start(dir)));
  await startAll(nodes);
  await m1.call("/test/write", { count, prefix: "a" });
  await m3.call("/test/write", { count: count / 6, prefix: "c" });
  await waitConverged(nodes, 60_000);

  await m3.kill("SIGTERM");
  await m1.call("/test/churn", { rounds, count });
  await m1.call("/test/delete", { ids: Array.from({ length: deletes }, (_, i) => `m1-a${i}`) });
}

// Three signed store processes on real SQLite files. m3 is stopped; m1 and m2 rewrite and delete rows and
// compact past everything m3 holds. m3 restarts on its old file, finds itself behind their floors, takes a full
// copy, drops what they deleted meanwhile, keeps what it wrote alone, and all three converge, also after all
// compact again.
Deno.test("a store behind the compaction horizon rejoins by full sync and converges", async () => {
  const { dir, nodes } = await threeNodes("store_compaction_", "cluster-compact");
  const [m1, m2, m3] = nodes;
  try {
    await cutOffM3(dir, nodes, { count: 60, rounds: 10, deletes: 20 });
    await m2.call("/test/write", { count: 30, prefix: "b" });
    await waitConverged([m1, m2], 60_000);
    const compacted = await Promise.all(
      [m1, m2].map((n) =>
        n.call<{ superseded: number; tombstones: number }>("/test/compact", { horizonMs: 0 })
      ),
    );
    // m1's last delete is its latest change, which compaction keeps: 19 of the 20 tombstones go.
    for (const c of compacted) assert.ok(c.superseded >= 540 && c.tombstones >= 19, JSON.stringify(c));

    await m3.start(dir);
    await startAll(nodes);
    const line = await m3.waitFor("full_sync ", 60_000);
    const removed = Number(line.split(" ")[2]);
    // The 20th deleted row arrives as its (kept) tombstone, not as a row removed by the full sync.
    assert.ok(removed >= 19, `m3 removed ${removed} rows deleted while it was away`);
    const live = await waitConverged(nodes, 60_000, { live: true });
    // 60 + 60 churned - 20 deleted, 30 by m2, 10 by m3.
    assert.equal(live.count, 60 + 60 - 20 + 30 + 10);
    assert.equal(live.integrity, "ok");
    await Promise.all(nodes.map((n) => n.call("/test/compact", { horizonMs: 0 })));
    await waitConverged(nodes, 60_000);
  } finally {
    await Promise.all(nodes.map((n) => n.kill()));
    await Deno.remove(dir, { recursive: true });
  }
});

// Three signed store processes on real SQLite files; m3 is cut off past the others' compaction. m2 turns liar: its
// sync replies claim 1000 versions of m1 it never had, all "compacted" (a floor that high). m3, back with only m2 as
// a peer, refuses that claim (reported once per attempt) instead of adopting it, so it does not skip m1's next
// 1000 versions: once it can reach m1 it takes a true full copy, and m1's later writes reach it as new changes.
Deno.test("a store refuses a peer's forged vector and floors and skips no version for it", async () => {
  const { dir, nodes } = await threeNodes("store_forged_", "cluster-forged");
  const [m1, m2, m3] = nodes;
  try {
    await cutOffM3(dir, nodes, { count: 30, rounds: 4, deletes: 10 });
    await waitConverged([m1, m2], 60_000);
    for (const n of [m1, m2]) await n.call("/test/compact", { horizonMs: 0 });
    await m2.call("/test/lie", { site: "m1", extra: 1000 });
    const real = (await m1.call<Record<string, { c: number }>>("/test/vector")).m1.c;

    await m3.start(dir);
    await startWith(m3, [m2]);
    const line = await m3.waitFor("refused_claim ", 30_000);
    assert.match(line, /its floor \d+ for Machine "m1" is followed by no change of it/);
    const held = (await m3.call<Record<string, { c: number }>>("/test/vector")).m1.c;
    assert.ok(held <= real, `m3 adopted the liar's watermark: ${held} > ${real}`);

    // With m1 reachable, m3 takes a true full copy; m1's next writes (versions the liar claimed) arrive as new.
    await startAll(nodes);
    await m3.waitFor("full_sync ", 60_000);
    await m1.call("/test/write", { count: 10, prefix: "z", pointer: false });
    const live = await waitConverged(nodes, 60_000, { live: true });
    // 30 written - 10 deleted + 30 churned + 5 by m3 + 10 written after the lie.
    assert.equal(live.count, 30 - 10 + 30 + 5 + 10);
    const after = (await m3.call<Record<string, { c: number }>>("/test/vector")).m1.c;
    assert.equal(after, (await m1.call<Record<string, { c: number }>>("/test/vector")).m1.c);
  } finally {
    await Promise.all(nodes.map((n) => n.kill()));
    await Deno.remove(dir, { recursive: true });
  }
});

// The store file under churn: the same rows rewritten N and 2N times, with and without compaction.
Deno.test("compaction keeps the store file bounded under churn", async () => {
  const dir = await Deno.makeTempDir({ prefix: "store_churn_" });
  const plain = new StoreNode(dir, "plain", "cluster-churn");
  const compacting = new StoreNode(dir, "compacting", "cluster-churn");
  try {
    await Promise.all([plain.start(dir), compacting.start(dir)]);
    const sizes: Record<string, number[]> = { plain: [], compacting: [] };
    for (let step = 0; step < 2; step++) {
      await plain.call("/test/churn", { rounds: 50, count: 100 });
      await compacting.call("/test/churn", { rounds: 50, count: 100, compact: true });
      await Promise.all([plain, compacting].map((n) => n.call("/test/checkpoint", {})));
      sizes.plain.push(await fileBytes(plain.path));
      sizes.compacting.push(await fileBytes(compacting.path));
    }
    console.log(`store bytes after 5,000 / 10,000 updates of 100 rows: ${JSON.stringify(sizes)}`);
    assert.ok(sizes.plain[1] > sizes.plain[0] * 1.5, "without compaction the file grows with every update");
    assert.ok(sizes.compacting[1] <= sizes.compacting[0] * 1.1, "with compaction the file stops growing");
    assert.ok(sizes.compacting[1] * 3 < sizes.plain[1]);
  } finally {
    await Promise.all([plain.kill(), compacting.kill()]);
    await Deno.remove(dir, { recursive: true });
  }
});
