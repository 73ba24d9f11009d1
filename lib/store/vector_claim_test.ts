// A peer's word about what it holds (its version vector and floors) is checked against what arrived. Each test
// serves a real store over HTTP behind a peer that rewrites its sync replies, and pulls from it with a SyncAgent:
// the lie is refused and counted, nothing is adopted or buried, and the real rows it hid still arrive later.
import assert from "node:assert/strict";
import type { Change } from "./change.ts";
import { StoreError } from "./errors.ts";
import { CLUSTER_HEADER, type SyncResponse } from "./protocol.ts";
import { generateSigningSecret } from "./signing.ts";
import { openStore, type Store } from "./store.ts";
import { SyncAgent, type SyncEvent } from "./sync_agent.ts";
import { createSyncApp } from "./sync_app.ts";
import { impossibleClaim, MAX_VECTOR_RANGES, VersionVectorSchema } from "./vector.ts";

const CLUSTER = "cluster-v";
const DAY = 24 * 3600_000;
const HORIZON = 7 * DAY;

interface World {
  m1: Store;
  m2: Store;
  m3: Store;
  advance(ms: number): void;
  [Symbol.dispose](): void;
}

async function copy(
  from: Store,
  to: Store,
  changes = from.changesMissingFrom(to.vector()).changes,
): Promise<void> {
  const result = await to.receive(await from.outbound(changes));
  assert.deepEqual(result.rejected, []);
}

/**
 * m1 writes k0..k9, m3 takes them and is then cut off; m1 rewrites them and deletes k0..k2; eight days later m1
 * writes "fresh1" and "fresh2", and m2 (which holds everything) compacts with the 7-day horizon, past what m3 holds.
 */
async function world(): Promise<World> {
  let now = Date.parse("2026-03-01T00:00:00Z");
  const open = (siteId: string): Store =>
    openStore({
      path: ":memory:",
      siteId,
      clusterId: CLUSTER,
      signingSecret: generateSigningSecret(),
      now: () => now,
    });
  const [m1, m2, m3] = ["m1", "m2", "m3"].map(open);
  for (const s of [m1, m2, m3]) m1.admit(s.siteId, s.signingKey!);
  for (const s of [m2, m3]) s.addAnchors([{ id: "m1", signingKey: m1.signingKey! }]);
  for (let i = 0; i < 10; i++) m1.cluster.put({ name: `k${i}`, value: 0 });
  await copy(m1, m2);
  await copy(m1, m3);
  now += 1000;
  for (let i = 0; i < 10; i++) m1.cluster.put({ name: `k${i}`, value: 1 });
  for (let i = 0; i < 3; i++) m1.cluster.delete(`k${i}`);
  await copy(m1, m2);
  now += 8 * DAY;
  m1.cluster.put({ name: "fresh1", value: 2 });
  now += 1000;
  m1.cluster.put({ name: "fresh2", value: 2 });
  await copy(m1, m2);
  const compacted = m2.compact({ horizonMs: HORIZON });
  assert.ok(compacted.superseded >= 10 && compacted.tombstones >= 2, JSON.stringify(compacted));
  assert.ok((m2.floors().m1 ?? 0) > (m3.vector().m1?.c ?? 0), "m2 compacted past what m3 holds");
  return {
    m1,
    m2,
    m3,
    advance: (ms) => {
      now += ms;
    },
    [Symbol.dispose]: () => [m1, m2, m3].forEach((s) => s.close()),
  };
}

/** Serves `store`'s sync protocol, each sync reply passed through `tamper` first. */
function serveLying(
  store: Store,
  tamper: (reply: SyncResponse) => void,
): { url: string; close(): Promise<void> } & AsyncDisposable {
  const app = createSyncApp(store);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    const response = await app.fetch(request);
    if (!new URL(request.url).pathname.endsWith("/sync") || !response.ok) return response;
    const reply = await response.json() as SyncResponse;
    tamper(reply);
    return Response.json(reply, { headers: { [CLUSTER_HEADER]: CLUSTER } });
  });
  const close = (): Promise<void> => server.shutdown();
  return { url: `http://127.0.0.1:${server.addr.port}`, close, [Symbol.asyncDispose]: close };
}

function live(store: Store): string[] {
  return store.cluster.list().map((r) => String(r.name)).sort();
}

function keyOf(change: Change): string {
  return `${change.table}/${change.key}`;
}

/** Pulls from the lying peer and asserts the lie was refused, counted once and changed no watermark or row. */
async function refused(w: World, tamper: (reply: SyncResponse) => void, reason: RegExp): Promise<void> {
  const peer = serveLying(w.m2, tamper);
  const events: SyncEvent[] = [];
  const agent = new SyncAgent(w.m3, { peers: () => [], horizonMs: HORIZON, onEvent: (e) => events.push(e) });
  const before = { m1: w.m3.vector().m1, rows: live(w.m3), floors: w.m3.floors() };
  try {
    await assert.rejects(agent.syncOnce(peer.url), (error: unknown) => {
      assert.ok(error instanceof StoreError && error.code === "conflict", String(error));
      assert.match(error.message, reason);
      return true;
    });
    const lies = events.flatMap((e) => e.type === "refused" ? e.rejected.filter((r) => r.index === -1) : []);
    assert.equal(lies.length, 1, JSON.stringify(events));
    assert.match(lies[0].reason, reason);
    assert.equal(events.some((e) => e.type === "full_sync"), false);
    // Nothing was adopted: the watermark is only what m3 itself holds without a gap, no row was buried.
    const after = w.m3.vector().m1!;
    assert.ok(after.c >= before.m1!.c && after.c <= w.m2.vector().m1!.c, JSON.stringify(after));
    assert.deepEqual(w.m3.floors(), before.floors);
    for (const row of before.rows) assert.ok(live(w.m3).includes(row), `${row} was buried`);
    // The liar is not asked for a full copy again for a while: the next round is an ordinary pull, whose claim is
    // still checked.
    events.length = 0;
    await agent.syncOnce(peer.url).catch(() => {});
    assert.equal(events.some((e) => e.type === "full_sync"), false);
    assert.deepEqual(w.m3.floors(), before.floors);
  } finally {
    await peer.close();
  }
  // Every real change still reaches m3 from an honest peer, none taken for a duplicate.
  const honest = new SyncAgent(w.m3, { peers: () => [], horizonMs: HORIZON });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    createSyncApp(w.m2).fetch,
  );
  try {
    await honest.syncOnce(`http://127.0.0.1:${server.addr.port}`);
  } finally {
    await server.shutdown();
  }
  assert.deepEqual(live(w.m3), live(w.m2));
  assert.deepEqual(w.m3.vector().m1, w.m2.vector().m1);
}

Deno.test("an honest peer's full copy is adopted: rows it deleted and compacted go, watermarks follow", async () => {
  using w = await world();
  await using peer = serveLying(w.m2, () => {});
  const events: string[] = [];
  const agent = new SyncAgent(w.m3, {
    peers: () => [],
    horizonMs: HORIZON,
    onEvent: (e) => events.push(e.type),
  });
  await agent.syncOnce(peer.url);
  assert.ok(events.includes("full_sync"), events.join(", "));
  assert.equal(events.includes("refused"), false, events.join(", "));
  assert.deepEqual(live(w.m3), live(w.m2));
  assert.equal(w.m3.cluster.get("k0"), undefined);
  assert.deepEqual(w.m3.vector().m1, w.m2.vector().m1);
});

Deno.test("a floor past every change of its site is refused: no version of it is skipped later", async () => {
  using w = await world();
  const real = w.m2.vector().m1!.c;
  await refused(w, (reply) => {
    reply.vector.m1 = { c: real + 1000 };
    reply.floors = { ...reply.floors, m1: real + 1000 };
  }, /floor \d+ for Machine "m1" is followed by no change of it/);
  // m1's next versions are taken as new, not as compacted duplicates.
  const next = w.m1.cluster.put({ name: "after", value: 3 });
  assert.equal((await w.m3.receive(await w.m1.outbound([next]))).applied, 1);
});

Deno.test("versions claimed above the floor and never sent are refused", async () => {
  using w = await world();
  const real = w.m2.vector().m1!.c;
  await refused(w, (reply) => {
    reply.vector.m1 = { c: real + 50, r: [[real + 60, real + 70]] };
  }, /claims versions \d+\.\.\d+ of Machine "m1" and 50 of them are not held here/);
});

Deno.test("a live row above the floor that the peer hides is not buried", async () => {
  using w = await world();
  // m3 already holds fresh1, past a gap; the peer hides it, hoping m3 deletes it as compacted there.
  const fresh1 = w.m1.changesMissingFrom({}).changes.find((c) => c.key === "fresh1")!;
  await copy(w.m1, w.m3, [fresh1]);
  await refused(w, (reply) => {
    reply.changes = reply.changes.filter((c) => keyOf(c) !== "cluster/fresh1");
  }, /holds cluster row "fresh1" \(Machine "m1" version \d+\) above its floor but did not send it/);
  assert.equal(w.m3.cluster.get("fresh1")?.value, 2);
});

Deno.test("a floor covering a change newer than the horizon is refused", async () => {
  using w = await world();
  const fresh1 = w.m1.changesMissingFrom({}).changes.find((c) => c.key === "fresh1")!;
  await copy(w.m1, w.m3, [fresh1]);
  await refused(w, (reply) => {
    reply.floors = { ...reply.floors, m1: fresh1.version };
    reply.changes = reply.changes.filter((c) => keyOf(c) !== "cluster/fresh1");
  }, new RegExp(`floor ${fresh1.version} for Machine "m1" covers version ${fresh1.version}, newer than`));
  assert.equal(w.m3.cluster.get("fresh1")?.value, 2);
});

Deno.test("a vector naming a Machine nobody admitted is refused", async () => {
  using w = await world();
  await refused(w, (reply) => {
    reply.vector["zz-ghost"] = { c: 0 };
  }, /names Machine "zz-ghost", which is not admitted here/);
});

Deno.test("a malformed, oversized or impossible vector is refused before anything is pulled", async () => {
  using w = await world();
  const ranges = Array.from(
    { length: MAX_VECTOR_RANGES + 1 },
    (_, i): [number, number] => [10 + 2 * i, 10 + 2 * i],
  );
  await refused(w, (reply) => {
    reply.vector.m1 = { c: 1, r: ranges };
  }, /version vector is malformed: m1\.r/);
  await refused(w, (reply) => {
    (reply as unknown as { vector: unknown }).vector = { m1: { c: "a lot" } };
  }, /version vector is malformed: m1\.c/);
  await refused(w, (reply) => {
    reply.floors = { m1: (reply.vector.m1?.c ?? 0) + 1 };
  }, /its floor \d+ for Machine "m1" lies above its watermark/);
  await refused(w, (reply) => {
    reply.floors = { m7: 3 };
  }, /names a floor 3 for Machine "m7" but holds nothing of it/);
});

Deno.test("impossibleClaim and the vector schema bound a claim on its face", () => {
  assert.equal(impossibleClaim({ m1: { c: 5 } }, { m1: 5 }), undefined);
  assert.match(impossibleClaim({ m1: { c: 5 } }, { m1: 6 }) ?? "", /lies above its watermark 5/);
  assert.match(impossibleClaim({}, { m1: 1 }) ?? "", /holds nothing of it/);
  const sites = Object.fromEntries(Array.from({ length: 1025 }, (_, i) => [`s${i}`, { c: 1 }]));
  assert.equal(VersionVectorSchema.safeParse(sites).success, false);
  const spread = Object.fromEntries(
    Array.from({ length: 11 }, (_, i) => [`s${i}`, { c: 0, r: Array.from({ length: 1000 }, () => [2, 2]) }]),
  );
  assert.equal(VersionVectorSchema.safeParse(spread).success, false);
  assert.equal(VersionVectorSchema.safeParse({ s1: { c: 3, r: [[5, 6]] } }).success, true);
});
