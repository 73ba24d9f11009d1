// Removal marks from other Machines are untrusted: refused on receipt when malformed or out of bounds, and a mark
// that passes still never makes a reader throw.
import assert from "node:assert/strict";
import { type Change, openStore, type Removal } from "../store/mod.ts";
import { removalDecision } from "./removal.ts";
import { listRemovals } from "./removal_rows.ts";

const CLUSTER = "cluster-r";

/** A change as Machine m2 would send it, with `key` and `body` as a hostile sender chose them. */
function forged(base: Change, version: number, key: string, body: unknown): Change {
  return { ...base, version, key, body: typeof body === "string" ? body : JSON.stringify(body) };
}

Deno.test("a forged removal mark from another Machine is refused with a reason, never applied, never thrown", () => {
  const a = openStore({ path: ":memory:", siteId: "m1", clusterId: CLUSTER });
  const b = openStore({ path: ":memory:", siteId: "m2", clusterId: CLUSTER });
  try {
    const mark = { project: "shop", service: "*", id: "r1", deployments: ["d1"], state: "active" };
    const good = b.removals.put(mark);
    const hostile: [unknown, RegExp][] = [
      [
        forged(good, 2, "shop/*", { ...mark, deployments: Array.from({ length: 1025 }, (_, i) => `d${i}`) }),
        /deployments/,
      ],
      [forged(good, 3, "shop/*", { ...mark, deployments: ["x".repeat(129)] }), /deployments\.0/],
      [forged(good, 4, "shop/*", { ...mark, deployments: "d1" }), /deployments/],
      [forged(good, 5, "shop/*", { ...mark, volumes: [7] }), /volumes\.0/],
      [forged(good, 6, "other/*", mark), /does not match body key/],
      [forged(good, 7, "shop/*", { ...mark, state: "x".repeat(33) }), /state/],
      [forged(good, 8, "shop/*", "{not json"), /Malformed change/],
      [forged(good, 9, "shop/*", { ...mark, pad: "y".repeat(300 * 1024) }), /Malformed change: body/],
      [forged(good, 10, "shop/*", { ...mark, project: "" }), /project/],
      [{ table: "removals", body: null }, /Malformed change/],
    ];
    const result = a.applyChanges([good, ...hostile.map(([change]) => change)]);
    assert.equal(result.applied, 1, JSON.stringify(result.rejected));
    assert.equal(result.rejected.length, hostile.length, JSON.stringify(result.rejected));
    result.rejected.forEach((r, i) => {
      assert.match(r.reason, hostile[i][1]);
      assert.ok(r.reason.length < 1000, "a bounded reason");
    });
    assert.deepEqual(a.removals.get("shop/*")?.deployments, ["d1"], "the good mark stands, unchanged");
  } finally {
    a.close();
    b.close();
  }
});

Deno.test("a mark that passes the schema but is odd (unknown state, no Deployments, newer fields) breaks no reader", () => {
  const store = openStore({ path: ":memory:", siteId: "m1", clusterId: CLUSTER });
  try {
    const odd: Removal[] = [
      { project: "shop", service: "web", id: "r1", deployments: [], state: "active", "from_newer": { a: 1 } },
      { project: "shop\nx", service: "*", id: "r2", deployments: ["d1"], state: "paused" },
      {
        project: "../etc",
        service: "*",
        id: "r3",
        deployments: ["d1"],
        state: "active",
        volumes: ["../../x"],
      },
    ];
    for (const mark of odd) store.removals.put(mark);
    store.containers.put({
      id: "c1",
      "machine_id": "m1",
      name: "shop-web-1",
      project: "shop",
      service: "web",
      deployment: "d1",
      image: "i",
      state: "running",
    });
    const views = listRemovals(store, {});
    assert.equal(views.length, 3);
    assert.deepEqual(views.flatMap((v) => v.remaining), [], "no odd mark covers shop's running container");
    const decision = removalDecision({
      machineId: "m1",
      nowMs: 1_000,
      containers: store.containers.list(),
      removals: store.removals.list(),
      acks: [],
      machines: ["m1"],
      down: new Set(),
      firstSeen: new Map(),
      boundMs: 1_000,
    });
    assert.deepEqual(decision.remove, []);
  } finally {
    store.close();
  }
});
