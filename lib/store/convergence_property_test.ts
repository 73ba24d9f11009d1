import assert from "node:assert/strict";
import fc from "fast-check";
import { type Change, supersedes } from "./change.ts";
import { StoreError } from "./errors.ts";
import { openStore, type Store } from "./store.ts";

// Replicas write, overwrite and delete both kinds of rows; messages are delivered late, twice, out of order or
// never; partitions come and go. After healing and anti-entropy until quiet, every replica must hold the same
// rows, and each name-keyed row must hold the greatest (hlc, site) ever written to it.

type Command =
  | { kind: "pointer"; r: number; k: number; v: number; del: boolean; targets: number[] }
  | { kind: "container"; r: number; k: number; v: number; del: boolean; targets: number[] }
  | { kind: "machine"; r: number; v: number; del: boolean; targets: number[] }
  | { kind: "foreign"; r: number; k: number }
  | { kind: "deliver"; m: number; dup: boolean; relayTo: number }
  | { kind: "drop"; m: number }
  | { kind: "exchange"; a: number; b: number; limit: number }
  | { kind: "partition"; mask: number }
  | { kind: "heal" }
  | { kind: "tick"; dt: number };

interface Message {
  from: number;
  to: number;
  changes: Change[];
}

const index = fc.nat({ max: 6 });
const targets = fc.uniqueArray(index, { maxLength: 3 });
/** Replica `r` writes (or deletes) value `v` at key `k` of a `kind` row, at most `maxKey`, and sends it to `targets`. */
function keyedWrite<K extends "pointer" | "container">(
  kind: K,
  maxKey: number,
): fc.Arbitrary<{ kind: K; r: number; k: number; v: number; del: boolean; targets: number[] }> {
  return fc.record({
    kind: fc.constant(kind),
    r: index,
    k: fc.nat({ max: maxKey }),
    v: fc.nat({ max: 9 }),
    del: fc.boolean(),
    targets,
  });
}

const command: fc.Arbitrary<Command> = fc.oneof(
  { weight: 4, arbitrary: keyedWrite("pointer", 3) },
  { weight: 4, arbitrary: keyedWrite("container", 2) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("machine" as const),
      r: index,
      v: fc.nat({ max: 9 }),
      del: fc.boolean(),
      targets,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("foreign" as const), r: index, k: fc.nat({ max: 2 }) }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("deliver" as const),
      m: fc.nat(),
      dup: fc.boolean(),
      relayTo: fc.integer({ min: -1, max: 6 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("drop" as const), m: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("exchange" as const),
      a: index,
      b: index,
      limit: fc.integer({ min: 1, max: 20 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("partition" as const), mask: fc.nat({ max: 127 }) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("heal" as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("tick" as const), dt: fc.nat({ max: 3 }) }) },
);

function exchangeOneWay(to: Store, from: Store, limit: number): number {
  let moved = 0;
  for (;;) {
    const page = from.changesMissingFrom(to.vector(), limit);
    if (page.changes.length === 0) return moved;
    const result = to.applyChanges(page.changes);
    assert.equal(result.rejected.length, 0);
    moved += result.applied;
    if (!page.more) return moved;
  }
}

function exchange(a: Store, b: Store, limit: number): number {
  return exchangeOneWay(a, b, limit) + exchangeOneWay(b, a, limit);
}

interface Written {
  hlc: string;
  site: string;
  deleted: boolean;
  body: string | null;
}

function runSchedule(count: number, skews: number[], commands: Command[]): void {
  let time = 1_000;
  const sites = Array.from({ length: count }, (_, i) => `site-${i}`);
  const stores = sites.map((siteId, i) =>
    openStore({ path: ":memory:", siteId, clusterId: "prop", now: () => time + skews[i] })
  );
  try {
    let group = Array<number>(count).fill(0);
    const queue: Message[] = [];
    const pointerWrites = new Map<string, Written[]>();
    const connected = (a: number, b: number): boolean => group[a] === group[b];
    const send = (from: number, to: number[], changes: Change[]): void => {
      for (const t of to) if (t < count && t !== from) queue.push({ from, to: t, changes });
    };
    for (const c of commands) {
      switch (c.kind) {
        case "pointer": {
          const r = c.r % count;
          const key = `p/s${c.k}`;
          const change = c.del
            ? stores[r].servingPointers.delete(key)
            : stores[r].servingPointers.put({ project: "p", service: `s${c.k}`, deployment: `d${c.v}` });
          const list = pointerWrites.get(key) ?? [];
          list.push({ hlc: change.hlc, site: change.site, deleted: change.deleted, body: change.body });
          pointerWrites.set(key, list);
          send(r, c.targets, [change]);
          break;
        }
        case "container": {
          const r = c.r % count;
          const id = `${sites[r]}-c${c.k}`;
          const table = stores[r].containers;
          const change = c.del ? (table.get(id) ? table.delete(id) : undefined) : table.put({
            id,
            machine_id: sites[r],
            project: "p",
            service: "s",
            name: `n${c.v}`,
            image: `img:${c.v}`,
          });
          if (change) send(r, c.targets, [change]);
          break;
        }
        case "machine": {
          const r = c.r % count;
          const change = c.del
            ? stores[r].machines.delete(sites[r])
            : stores[r].machines.put({ id: sites[r], name: `m${c.v}` });
          send(r, c.targets, [change]);
          break;
        }
        case "foreign": {
          const r = c.r % count;
          const other = sites[(r + 1) % count];
          assert.throws(
            () =>
              stores[r].containers.put({
                id: `${other}-c${c.k}`,
                machine_id: other,
                project: "p",
                service: "s",
                name: "x",
                image: "x",
              }),
            (e) => e instanceof StoreError && e.code === "conflict",
          );
          // A row another Machine created stays refused even when the body names this Machine.
          if (stores[r].containers.get(`${other}-c${c.k}`) !== undefined) {
            assert.throws(
              () =>
                stores[r].containers.put({
                  id: `${other}-c${c.k}`,
                  machine_id: sites[r],
                  project: "p",
                  service: "s",
                  name: "x",
                  image: "x",
                }),
              (e) => e instanceof StoreError && e.code === "conflict",
            );
          }
          break;
        }
        case "deliver": {
          if (queue.length === 0) break;
          const at = c.m % queue.length;
          const message = queue[at];
          if (!connected(message.from, message.to)) break;
          if (!c.dup) queue.splice(at, 1);
          const before = stores[message.to].seq;
          const result = stores[message.to].applyChanges(message.changes);
          assert.equal(result.rejected.length, 0);
          if (result.applied === 0) assert.equal(stores[message.to].seq, before);
          // Relaying forwards another site's change, so receivers see per-site gaps.
          if (c.relayTo >= 0) send(message.to, [c.relayTo], message.changes);
          break;
        }
        case "drop":
          if (queue.length > 0) queue.splice(c.m % queue.length, 1);
          break;
        case "exchange": {
          const a = c.a % count;
          const b = c.b % count;
          if (a !== b && connected(a, b)) exchange(stores[a], stores[b], c.limit);
          break;
        }
        case "partition":
          group = group.map((_, i) => (c.mask >> i) & 1);
          break;
        case "heal":
          group = group.map(() => 0);
          break;
        case "tick":
          time += c.dt;
          break;
      }
    }
    // Heal and run anti-entropy over every pair until a full pass moves nothing.
    for (let pass = 0;; pass++) {
      assert.ok(pass < 10, "anti-entropy did not go quiet");
      let moved = 0;
      for (let a = 0; a < count; a++) {
        for (let b = a + 1; b < count; b++) moved += exchange(stores[a], stores[b], 50);
      }
      if (moved === 0) break;
    }
    const dumps = stores.map((s) => s.dump());
    for (let i = 1; i < count; i++) assert.equal(dumps[i], dumps[0], `replica ${i} differs from replica 0`);
    for (const store of stores) {
      for (const [key, other] of Object.entries(store.vector())) {
        assert.equal(other.r, undefined, `gap left in ${key}`);
      }
      assert.ok(store.caughtUpWith(stores[0].vector()));
    }
    const rows = JSON.parse(dumps[0]).tables.serving_pointers as unknown[][];
    for (const [key, writes] of pointerWrites) {
      const winner = writes.reduce((best, w) => (supersedes(w, best) ? w : best));
      const row = rows.find((r) => r[0] === key);
      assert.ok(row !== undefined, `missing row "${key}"`);
      assert.deepEqual([row[1] === 1, row[2], row[3], row[6]], [
        winner.deleted,
        winner.hlc,
        winner.site,
        winner.body,
      ]);
    }
  } finally {
    for (const store of stores) store.close();
  }
}

Deno.test("replicas converge under random schedules, duplication, drops and partitions", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 3, max: 7 }),
      fc.array(fc.integer({ min: -3, max: 3 }), { minLength: 7, maxLength: 7 }),
      fc.array(command, { minLength: 5, maxLength: 60 }),
      (count, skews, commands) => runSchedule(count, skews, commands),
    ),
    { numRuns: 1000 },
  );
});
