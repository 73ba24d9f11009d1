import { equal } from "node:assert/strict";
import { managementAddress } from "../mesh/mod.ts";
import { openStore, type Store } from "../store/mod.ts";
import { CallerIndex, meshCaller, meshRpcHandler, storeCallers } from "./mesh_rpc.ts";

const KEY = btoa(String.fromCharCode(...new Uint8Array(32).fill(7)));
const ROWS = [
  { id: "self", name: "m1", subnet: "10.210.0.0/24" },
  { id: "b", name: "m2", subnet: "10.210.1.0/24", "public_key": KEY },
  { id: "c", name: "m3", subnet: "10.210.2.0/24" },
];

Deno.test("only a known Machine's gateway or management address is a mesh caller", () => {
  equal(meshCaller("10.210.1.1", ROWS, "self")?.name, "m2");
  equal(meshCaller("::ffff:10.210.2.1", ROWS, "self")?.name, "m3");
  equal(meshCaller(managementAddress(KEY), ROWS, "self")?.name, "m2");
  equal(meshCaller(`[${managementAddress(KEY).toUpperCase()}]`, ROWS, "self")?.name, "m2");
  // A container on a member Machine is inside its subnet but is not the Machine.
  equal(meshCaller("10.210.1.7", ROWS, "self"), undefined);
  // This Machine's own gateway never calls in over the mesh.
  equal(meshCaller("10.210.0.1", ROWS, "self"), undefined);
  equal(meshCaller("192.0.2.5", ROWS, "self"), undefined);
  equal(meshCaller("10.210.3.1", [...ROWS, { id: "d", subnet: "not a subnet" }], "self"), undefined);
});

Deno.test("the mesh handler refuses strangers and second hops, and passes members through", async () => {
  let served = 0;
  const handle = meshRpcHandler({
    caller: (address, selfId) => meshCaller(address, ROWS, selfId),
    self: () => ({ id: "self", name: "m1" }),
    fetch: () => {
      served++;
      return Response.json({ ok: true });
    },
  });
  const post = (path: string): Request => new Request(`http://10.210.0.1:51000${path}`, { method: "POST" });
  const signal = new AbortController().signal;

  const stranger = await handle(post("/rpc/ployz.machine.status.v1"), "10.210.1.7", signal);
  equal(stranger.status, 401);
  const body = await stranger.json();
  equal(body.error.code, "unauthenticated");
  equal(body.error.details.capability, "ployz.machine.status.v1");

  const hop = await handle(post("/rpc/via/c/ployz.machine.status.v1"), "10.210.1.1", signal);
  equal(hop.status, 404);
  equal((await hop.json()).error.code, "unsupported");

  const member = await handle(post("/rpc/ployz.machine.status.v1"), "10.210.1.1", signal);
  equal(member.status, 200);
  await member.body?.cancel();
  equal(served, 1);
});

Deno.test("the caller index answers as meshCaller does, reading the rows once until invalidated", () => {
  let reads = 0;
  const rows = [...ROWS, { id: "d", subnet: "not a subnet" }, {
    id: "e",
    name: "dup",
    subnet: "10.210.1.0/24",
  }];
  const index = new CallerIndex(() => {
    reads++;
    return rows;
  });
  for (
    const address of [
      "10.210.1.1",
      "::ffff:10.210.2.1",
      managementAddress(KEY),
      `[${managementAddress(KEY).toUpperCase()}]`,
      "10.210.1.7",
      "10.210.0.1",
      "192.0.2.5",
    ]
  ) {
    equal(index.caller(address, "self")?.name, meshCaller(address, rows, "self")?.name, address);
  }
  // The first row holding an address wins, as in meshCaller.
  equal(index.caller("10.210.1.1", "self")?.name, "m2");
  equal(reads, 1);
  index.invalidate();
  equal(index.caller("10.210.2.1", "self")?.name, "m3");
  equal(reads, 2);
  // Another self id reads again: its own row is left out.
  equal(index.caller("10.210.0.1", "b")?.name, "m1");
  equal(index.caller("10.210.1.1", "b")?.name, "dup");
  equal(reads, 3);
});

Deno.test("store callers: a new Machine, a changed key and a retirement are seen on the next request", () => {
  const store = openStore({ path: ":memory:", siteId: "self", clusterId: "c-test" });
  // Each Machine writes its own row; this one receives them as it would from sync.
  const peers = new Map<string, Store>();
  const write = (row: { id: string; name: string; subnet: string; "public_key"?: string }): void => {
    let peer = peers.get(row.id);
    if (peer === undefined) {
      peer = openStore({ path: ":memory:", siteId: row.id, clusterId: "c-test" });
      peers.set(row.id, peer);
    }
    peer.machines.put(row);
    const result = store.applyChanges(peer.changesMissingFrom(store.vector()).changes);
    equal(result.rejected.length, 0);
  };
  try {
    let reads = 0;
    const live = store.liveMachines.bind(store);
    store.liveMachines = () => {
      reads++;
      return live();
    };
    const caller = storeCallers(() => store);
    store.machines.put({ id: "self", name: "m1", subnet: "10.210.0.0/24" });
    write({ id: "b", name: "m2", subnet: "10.210.1.0/24", "public_key": KEY });
    equal(caller("10.210.1.1", "self")?.name, "m2");
    equal(caller(managementAddress(KEY), "self")?.name, "m2");
    equal(caller("10.210.2.1", "self"), undefined);
    equal(reads, 1);
    // A write to another table keeps the index.
    store.cluster.put({ name: "some-setting", value: 1 });
    equal(caller("10.210.1.1", "self")?.name, "m2");
    equal(reads, 1);

    write({ id: "c", name: "m3", subnet: "10.210.2.0/24" });
    equal(caller("10.210.2.1", "self")?.name, "m3");
    equal(reads, 2);

    const other = btoa(String.fromCharCode(...new Uint8Array(32).fill(9)));
    write({ id: "b", name: "m2", subnet: "10.210.1.0/24", "public_key": other });
    equal(caller(managementAddress(KEY), "self"), undefined);
    equal(caller(managementAddress(other), "self")?.name, "m2");

    store.retiredMachines.put({ "machine_id": "b", "retired_by": "self" });
    equal(caller("10.210.1.1", "self"), undefined);
    equal(caller("10.210.2.1", "self")?.name, "m3");

    // Another store (a join or a leave replaced it) is read afresh.
    const next = openStore({ path: ":memory:", siteId: "self", clusterId: "c-other" });
    try {
      let current = next;
      const switching = storeCallers(() => current);
      equal(switching("10.210.2.1", "self"), undefined);
      current = store;
      equal(switching("10.210.2.1", "self")?.name, "m3");
    } finally {
      next.close();
    }
  } finally {
    store.close();
    for (const peer of peers.values()) peer.close();
  }
});
