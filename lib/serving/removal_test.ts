// Removal marks, pure: what a mark covers, when a Machine's own covered container goes, and the acks it writes.
import { deepEqual, equal } from "node:assert/strict";
import type { Ack, Container, Removal } from "../store/mod.ts";
import { listRemovals, markRemoval, noteVolumeError } from "./removal_rows.ts";
import {
  coveringRemoval,
  markVolumes,
  removalAcksToWrite,
  removalDecision,
  type RemovalInput,
} from "./removal.ts";
import { openStore } from "../store/mod.ts";

function row(id: string, machine: string, fields: Partial<Container> = {}): Container {
  return {
    id,
    "machine_id": machine,
    name: id,
    project: "shop",
    service: "web",
    deployment: "d1",
    image: "app:1",
    state: "running",
    ...fields,
  };
}

const MARK: Removal = { project: "shop", service: "*", id: "r1", deployments: ["d1"], state: "active" };

function input(fields: Partial<RemovalInput>): RemovalInput {
  return {
    machineId: "m1",
    nowMs: 1_000,
    containers: [],
    removals: [MARK],
    acks: [],
    machines: ["m1", "m2", "m3"],
    down: new Set(),
    firstSeen: new Map(),
    boundMs: 300_000,
    ...fields,
  };
}

const ack = (m: string, deployment = "r1"): Ack => ({ "machine_id": m, pointer: "rm:shop/*", deployment });

Deno.test("a mark covers its Deployments only: never a newer Deploy, another Service, or the Ingress Proxy", () => {
  equal(coveringRemoval(row("a", "m1"), [MARK]), MARK);
  equal(coveringRemoval(row("b", "m1", { deployment: "d2" }), [MARK]), undefined);
  equal(
    coveringRemoval(row("c", "m1", { project: "ployz-system" }), [{ ...MARK, project: "ployz-system" }]),
    undefined,
  );
  equal(coveringRemoval(row("d", "m1", { service: "db" }), [{ ...MARK, service: "web" }]), undefined);
  equal(coveringRemoval(row("e", "m1"), [{ ...MARK, state: "cancelled" }]), undefined);
});

Deno.test("every covered container leaves the projections; only this Machine's own are removed", () => {
  const containers = [
    row("a", "m1"),
    row("b", "m2"),
    row("c", "m1", { state: "exited" }),
    row("n", "m1", { deployment: "d2" }),
  ];
  const d = removalDecision(input({ containers }));
  deepEqual([...d.leaving].sort(), ["a", "b", "c"]);
  deepEqual(d.remove.map((i) => [i.containerId, i.reason]), [["c", "at_rest"]]);
  deepEqual(d.waiting.map((i) => [i.containerId, i.missing]), [["a", ["m1", "m2", "m3"]]]);
});

Deno.test("a live container goes once every Machine waited for acked, or the bound passed", () => {
  const containers = [row("a", "m1")];
  const firstSeen = new Map<string, number>();
  const acked = removalDecision(input({ containers, firstSeen, acks: [ack("m1"), ack("m2"), ack("m3")] }));
  deepEqual(acked.remove.map((i) => i.reason), ["acked"]);
  // m3 was not reached when the mark was written: it is not waited for; an ack of an older mark does not count.
  const from = removalDecision(input({
    containers,
    removals: [{ ...MARK, "ack_from": ["m1", "m2"] }],
    acks: [ack("m1"), ack("m2", "r0")],
  }));
  deepEqual(from.waiting.map((i) => i.missing), [["m2"]]);
  const down = removalDecision(input({ containers, acks: [ack("m1"), ack("m2")], down: new Set(["m3"]) }));
  deepEqual(down.remove.map((i) => i.reason), ["acked"]);
  const early = removalDecision(input({ containers, firstSeen }));
  equal(early.remove.length, 0);
  const late = removalDecision(input({ containers, firstSeen, nowMs: 1_000 + 300_000 }));
  deepEqual(late.remove.map((i) => i.reason), ["bound"]);
});

Deno.test("a Machine acks each active mark once, and again for a new mark of the same key", () => {
  const now = new Date(0);
  deepEqual(removalAcksToWrite("m1", [MARK], [], now).map((a) => [a.pointer, a.deployment]), [[
    "rm:shop/*",
    "r1",
  ]]);
  deepEqual(removalAcksToWrite("m1", [MARK], [ack("m1")], now), []);
  deepEqual(removalAcksToWrite("m1", [{ ...MARK, id: "r2" }], [ack("m1")], now).map((a) => a.deployment), [
    "r2",
  ]);
  deepEqual(removalAcksToWrite("m1", [{ ...MARK, state: "cancelled" }], [], now), []);
});

Deno.test("marking adds the Deployments the store holds; cancelling needs an active mark", () => {
  const store = openStore({ path: ":memory:", siteId: "m1", clusterId: "c" });
  try {
    store.containers.put(row("a", "m1", { deployment: "d0" }));
    const { removal } = markRemoval(store, {
      project: "shop",
      id: "r1",
      deployments: ["d1"],
      state: "active",
    });
    deepEqual(removal.deployments.sort(), ["d0", "d1"]);
    equal(store.removals.get("shop/*")?.state, "active");
    markRemoval(store, { project: "shop", id: "r1", deployments: [], state: "cancelled" });
    equal(store.removals.get("shop/*")?.state, "cancelled");
    let code = "";
    try {
      markRemoval(store, { project: "shop", id: "r1", deployments: [], state: "cancelled" });
    } catch (error) {
      code = (error as { code: string }).code;
    }
    equal(code, "not_found");
  } finally {
    store.close();
  }
});

Deno.test("a volume a Machine could not remove for a mark is on its own ack, and every copy lists it", () => {
  const store = openStore({ path: ":memory:", siteId: "m2", clusterId: "c" });
  try {
    const { removal } = markRemoval(store, {
      project: "shop",
      id: "r1",
      deployments: ["d1"],
      state: "active",
      volumes: ["shop_db"],
    });
    // Written before the Machine's own ack exists: the ack is written with it.
    noteVolumeError(store, "m2", removal, `cannot remove volume "shop_db": volume is in use`);
    const [view] = listRemovals(store, { project: "shop" });
    deepEqual(view.acked, ["m2"]);
    deepEqual(view.volume_errors, [{
      "machine_id": "m2",
      error: `cannot remove volume "shop_db": volume is in use`,
    }]);
    // Bounded: a flood of failures keeps at most 16, each at most 300 characters.
    for (let i = 0; i < 40; i++) noteVolumeError(store, "m2", removal, "x".repeat(1000));
    const [again] = listRemovals(store, { project: "shop" });
    equal(again.volume_errors.length, 16);
    equal(again.volume_errors[15].error.length, 300);
    // Another Machine's ack with a malformed field is read as no errors, never a crash.
    const m3 = openStore({ path: ":memory:", siteId: "m3", clusterId: "c" });
    m3.acks.put({
      "machine_id": "m3",
      pointer: "rm:shop/*",
      deployment: "r1",
      "volume_errors": [42, { a: 1 }],
    });
    store.applyChanges(m3.changesMissingFrom(store.vector()).changes);
    m3.close();
    deepEqual(listRemovals(store, {})[0].acked, ["m2", "m3"]);
    equal(listRemovals(store, {})[0].volume_errors.filter((v) => v.machine_id === "m3").length, 0);
    // An ack of an older mark of the same key does not carry over.
    const { removal: newer } = markRemoval(store, {
      project: "shop",
      id: "r2",
      deployments: [],
      state: "active",
    });
    deepEqual(listRemovals(store, {})[0].volume_errors, []);
    noteVolumeError(store, "m2", newer, 'cannot remove volume "x": busy');
    deepEqual(listRemovals(store, {})[0].volume_errors, [{
      "machine_id": "m2",
      error: `cannot remove volume "x": busy`,
    }]);
  } finally {
    store.close();
  }
});

Deno.test("markVolumes() keeps a mark to its own Project's volumes; others are refused, never removed", () => {
  const mark: Removal = {
    ...MARK,
    volumes: ["shop_data", "other_data", "shop_", "shopping_data", "/etc", 42 as unknown as string],
  };
  deepEqual(markVolumes(mark), {
    own: ["shop_data"],
    refused: ["other_data", "shop_", "shopping_data", "/etc"],
  });
  deepEqual(markVolumes(MARK), { own: [], refused: [] });
});
