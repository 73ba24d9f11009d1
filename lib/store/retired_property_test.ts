import assert from "node:assert/strict";
import fc from "fast-check";
import type { Change } from "./change.ts";
import { StoreError } from "./errors.ts";
import { openStore, type Store } from "./store.ts";

// Retiring a gone Machine within the store's rules: only a Machine writes its own rows, so no one deletes the gone
// Machine's rows. Instead any live Machine (several, concurrently) writes a name-keyed `retired_machines` mark and
// every reader leaves the retired Machine's rows out. Whatever the order, duplication or loss of deliveries, and
// even when the gone Machine's late rows arrive after the mark, every live replica ends with the same view and
// none of the gone Machine's rows in it; the live Machines' own rows are untouched.

const GONE = 3;
const LIVE = [0, 1, 2];

type Command =
  | { kind: "write"; r: number; k: number; v: number; del: boolean; to: number[] }
  | { kind: "retire"; r: number; to: number[] }
  | { kind: "deliver"; m: number; dup: boolean }
  | { kind: "drop"; m: number }
  | { kind: "tick"; dt: number };

const to = fc.uniqueArray(fc.nat({ max: 3 }), { maxLength: 3 });
const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("write" as const),
      r: fc.nat({ max: 3 }),
      k: fc.nat({ max: 2 }),
      v: fc.nat({ max: 9 }),
      del: fc.boolean(),
      to,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("retire" as const), r: fc.constantFrom(...LIVE), to }),
  },
  {
    weight: 6,
    arbitrary: fc.record({ kind: fc.constant("deliver" as const), m: fc.nat(), dup: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("drop" as const), m: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("tick" as const), dt: fc.nat({ max: 3 }) }) },
);

function exchange(a: Store, b: Store): number {
  let moved = 0;
  for (const [x, y] of [[a, b], [b, a]]) {
    for (;;) {
      const page = y.changesMissingFrom(x.vector(), 50);
      if (page.changes.length === 0) break;
      moved += x.applyChanges(page.changes).applied;
      if (!page.more) break;
    }
  }
  return moved;
}

function view(store: Store): string {
  const machines = store.liveMachines().map((m) => `${m.id}=${m.name}`).sort();
  const containers = store.liveContainers().map((c) => `${c.id}=${c.name}`).sort();
  return JSON.stringify({ machines, containers });
}

function run(commands: Command[], finalRetirer: number): void {
  let time = 1_000;
  const sites = [0, 1, 2, 3].map((i) => `site-${i}`);
  const stores = sites.map((siteId) =>
    openStore({ path: ":memory:", siteId, clusterId: "prop", now: () => time })
  );
  try {
    const queue: { to: number; changes: Change[] }[] = [];
    const send = (from: number, targets: number[], changes: Change[]): void => {
      for (const t of targets) if (t !== from) queue.push({ to: t, changes });
    };
    for (let i = 0; i < 4; i++) {
      send(i, [0, 1, 2, 3], [stores[i].machines.put({ id: sites[i], name: `m${i}` })]);
    }
    for (const c of commands) {
      if (c.kind === "write") {
        const id = `${sites[c.r]}-c${c.k}`;
        const table = stores[c.r].containers;
        const change = c.del ? (table.get(id) === undefined ? undefined : table.delete(id)) : table.put({
          id,
          "machine_id": sites[c.r],
          project: "p",
          service: "s",
          name: `n${c.v}`,
          image: "i",
        });
        if (change !== undefined) send(c.r, c.to, [change]);
      } else if (c.kind === "retire") {
        const change = stores[c.r].retiredMachines.put({
          "machine_id": sites[GONE],
          name: "m3",
          "retired_by": sites[c.r],
        });
        send(c.r, c.to, [change]);
      } else if (c.kind === "deliver") {
        if (queue.length === 0) continue;
        const at = c.m % queue.length;
        const message = queue[at];
        if (!c.dup) queue.splice(at, 1);
        assert.equal(stores[message.to].applyChanges(message.changes).rejected.length, 0);
      } else if (c.kind === "drop") {
        if (queue.length > 0) queue.splice(c.m % queue.length, 1);
      } else time += c.dt;
    }
    // No one writes the gone Machine's rows, not even to retire them: the store refuses a non-owner.
    assert.throws(
      () =>
        stores[0].containers.put({
          id: `${sites[GONE]}-c0`,
          "machine_id": sites[GONE],
          project: "p",
          service: "s",
          name: "x",
          image: "i",
        }),
      (e) => e instanceof StoreError && e.code === "conflict",
    );
    // The operator's command always writes the mark at least once; then the gone Machine's last rows may still be
    // in flight, and the live Machines sync among themselves until quiet.
    stores[finalRetirer].retiredMachines.put({
      "machine_id": sites[GONE],
      name: "m3",
      "retired_by": sites[finalRetirer],
    });
    for (const message of queue) {
      if (message.to !== GONE) stores[message.to].applyChanges(message.changes);
    }
    for (let pass = 0;; pass++) {
      assert.ok(pass < 10, "anti-entropy did not go quiet");
      let moved = 0;
      for (const a of LIVE) for (const b of LIVE) if (a < b) moved += exchange(stores[a], stores[b]);
      if (moved === 0) break;
    }
    const views = LIVE.map((i) => view(stores[i]));
    for (const i of LIVE) assert.equal(views[i], views[0], `replica ${i}'s view differs from replica 0's`);
    for (const i of LIVE) {
      const store = stores[i];
      assert.equal(store.retiredIds().has(sites[GONE]), true);
      assert.ok(!store.liveMachines().some((m) => m.id === sites[GONE]));
      assert.ok(!store.liveContainers().some((c) => c.machine_id === sites[GONE]));
      // The live Machines' own rows are all still there.
      const own = store.containers.list().filter((c) => c.machine_id !== sites[GONE]).map((c) => c.id).sort();
      assert.deepEqual(store.liveContainers().map((c) => c.id).sort(), own);
      assert.deepEqual(store.liveMachines().map((m) => m.id).sort(), LIVE.map((j) => sites[j]));
    }
  } finally {
    for (const s of stores) s.close();
  }
}

Deno.test("a retired mark written by any Machine hides the gone Machine's rows on every live replica (property)", () => {
  fc.assert(
    fc.property(fc.array(command, { maxLength: 60 }), fc.constantFrom(...LIVE), (commands, retirer) => {
      run(commands, retirer);
    }),
    { numRuns: 150 },
  );
});
