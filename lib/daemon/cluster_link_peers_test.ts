// The Cluster link works its peers out from the `machines` rows once per change of them (a sync round and every
// sync request ask), and a change in the Machine list, a subnet or a retirement is seen on the very next question.
import { deepEqual, equal } from "node:assert/strict";
import { openStore, type Store } from "../store/mod.ts";
import { ClusterLink } from "./cluster_link.ts";
import { DEPARTED_GRACE_MS, nextDeparted, type Peer } from "./cluster_link_peers.ts";

const KEY = (fill: number): string => btoa(String.fromCharCode(...new Uint8Array(32).fill(fill)));

Deno.test("the link's peers are read once per change of the machines rows and follow every change", async () => {
  const store = openStore({ path: ":memory:", siteId: "self", clusterId: "c-test" });
  const peers = new Map<string, Store>();
  // Each Machine writes its own row; this one receives them as from sync.
  const write = (row: { id: string; name: string; subnet: string; "public_key": string }): void => {
    let peer = peers.get(row.id);
    if (peer === undefined) {
      peer = openStore({ path: ":memory:", siteId: row.id, clusterId: "c-test" });
      peers.set(row.id, peer);
    }
    peer.machines.put(row);
    equal(store.applyChanges(peer.changesMissingFrom(store.vector()).changes).rejected.length, 0);
  };
  let reads = 0;
  const live = store.liveMachines.bind(store);
  store.liveMachines = () => {
    reads++;
    return live();
  };
  const link = new ClusterLink({
    store,
    keyPath: "/nonexistent/key",
    selfId: "self",
    subnet: "10.210.0.0/24",
    log: () => {},
  });
  const urls = (): string[] => link.peerUrls().map((p) => `${p.machineId} ${p.url}`);
  try {
    store.machines.put({ id: "self", name: "m1", subnet: "10.210.0.0/24", "public_key": KEY(1) });
    write({ id: "b", name: "m2", subnet: "10.210.1.0/24", "public_key": KEY(2) });
    deepEqual(urls(), ["b http://10.210.1.1:51000"]);
    deepEqual(urls(), ["b http://10.210.1.1:51000"]);
    equal(reads, 1, "asked twice, read once");
    store.cluster.put({ name: "some-setting", value: 1 });
    urls();
    equal(reads, 1, "a write to another table keeps the peers");

    write({ id: "c", name: "m3", subnet: "10.210.2.0/24", "public_key": KEY(3) });
    deepEqual(urls(), ["b http://10.210.1.1:51000", "c http://10.210.2.1:51000"]);
    write({ id: "c", name: "m3", subnet: "10.210.3.0/24", "public_key": KEY(4) });
    deepEqual(urls(), ["b http://10.210.1.1:51000", "c http://10.210.3.1:51000"]);
    store.retiredMachines.put({ "machine_id": "b", "retired_by": "self" });
    deepEqual(urls(), ["c http://10.210.3.1:51000"]);
    equal(reads, 4);
  } finally {
    await link.stop();
    store.close();
    for (const peer of peers.values()) peer.close();
  }
});

const peer = (id: string, fill: number): Peer => ({
  machineId: id,
  publicKey: KEY(fill),
  subnet: `10.210.${fill}.0/24`,
  endpoints: [],
});

Deno.test("nextDeparted: a peer gone from the rows keeps a grace, ended by its bound or its return", () => {
  const [b, c, d] = [peer("b", 2), peer("c", 3), peer("d", 4)];
  const first = nextDeparted({
    applied: [b, c, d],
    live: [b],
    departed: new Map(),
    retired: new Set(),
    nowMs: 1_000,
  });
  deepEqual(first.newly.map((p) => p.machineId), ["c", "d"]);
  deepEqual([...first.departed.values()].map((x) => [x.peer.machineId, x.until]), [
    ["c", 1_000 + DEPARTED_GRACE_MS],
    ["d", 1_000 + DEPARTED_GRACE_MS],
  ]);
  // Already departed: no second grace. `d` came back: its entry goes.
  const second = nextDeparted({
    applied: [b],
    live: [b, d],
    departed: first.departed,
    retired: new Set(),
    nowMs: 2_000,
  });
  deepEqual(second.newly, []);
  deepEqual([...second.departed.keys()], [c.publicKey]);
  // The bound passed.
  const third = nextDeparted({
    applied: [b, d],
    live: [b, d],
    departed: second.departed,
    retired: new Set(),
    nowMs: 1_000 + DEPARTED_GRACE_MS,
  });
  equal(third.departed.size, 0);
});

Deno.test("nextDeparted: a retired Machine gets no grace, and loses one it had", () => {
  const [b, c] = [peer("b", 2), peer("c", 3)];
  const gone = nextDeparted({
    applied: [b, c],
    live: [],
    departed: new Map(),
    retired: new Set(["c"]),
    nowMs: 0,
  });
  deepEqual(gone.newly.map((p) => p.machineId), ["b"]);
  const retiredLater = nextDeparted({
    applied: [],
    live: [],
    departed: gone.departed,
    retired: new Set(["b"]),
    nowMs: 1,
  });
  equal(retiredLater.departed.size, 0);
});
