import assert from "node:assert/strict";
import { join } from "node:path";
import { DEFAULT_MEMBERSHIP_THRESHOLDS } from "../mesh/mod.ts";
import { RpcError } from "../rpc/mod.ts";
import { openStore, type Store } from "../store/mod.ts";
import { ClusterLifecycle } from "./cluster_lifecycle.ts";
import { storePath } from "./cluster_records.ts";
import type { LifecycleDeps, LinkPort } from "./cluster_lifecycle_deps.ts";
import { mintId } from "./ids.ts";
import { type LocalMachine, readMachineFile } from "./machine_file.ts";
import { machineToWire } from "./machine_handlers.ts";
import { parseSubnet } from "./subnet.ts";
import { sleep } from "../util/mod.ts";

const KEY = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

interface Fixture {
  dir: string;
  events: string[];
  owned: { id: string; name: string }[];
  deps: LifecycleDeps;
  lifecycle: ClusterLifecycle;
  /** The store the Entry Machine holds, when a test joins; the fake link syncs from it. */
  entry?: Store;
}

async function fixture(options: { record?: LocalMachine; entry?: Store } = {}): Promise<Fixture> {
  const dir = await Deno.makeTempDir({ prefix: "ployz-lifecycle-" });
  const events: string[] = [];
  const owned: { id: string; name: string }[] = [];
  const f = { dir, events, owned, entry: options.entry } as Fixture;
  f.deps = {
    dataDir: dir,
    networkSpec: (subnet) => ({ name: "ployz", subnet, gateway: parseSubnet(subnet)!.gateway }),
    watchNetwork: () => Promise.resolve(undefined),
    engine: {
      ensureNetwork(spec) {
        events.push(`network ${spec.subnet}`);
        return Promise.resolve({
          id: "n",
          name: spec.name,
          subnet: spec.subnet,
          gateway: spec.gateway,
          created: true,
        });
      },
      listOwned: () => Promise.resolve(owned.map((c) => ({ ...c }) as never)),
      removeContainer(ref) {
        events.push(`remove ${ref}`);
        return Promise.resolve();
      },
    },
    thresholds: DEFAULT_MEMBERSHIP_THRESHOLDS,
    log: (line) => events.push(`log ${line}`),
    openStore: (path, siteId, clusterId) => openStore({ path, siteId, clusterId }),
    machineRow: (r) => ({ ...machineToWire(r), endpoints: [], capabilities: [], "daemon_version": "0.0.0" }),
    openLink: (store, _record, hints) => fakeLink(f, store, hints.map((h) => h.machineId)),
    startPublisher: () => {
      events.push("publisher start");
      return {
        stop: () => Promise.resolve(void events.push("publisher stop")),
        rescan: () => Promise.resolve(),
      };
    },
    startServing: (_store, subnet) => {
      events.push(`serving start ${subnet.gateway}`);
      return Promise.resolve({ stop: () => Promise.resolve(void events.push("serving stop")) });
    },
    catchUpPauseMs: 5,
  };
  const record = options.record ?? { id: mintId(), name: "m1", phase: "uninitialized", "public_key": KEY };
  f.lifecycle = new ClusterLifecycle(record, f.deps);
  return f;
}

// A link without WireGuard: its agent syncs this Machine's store from the Entry Machine's, in process.
function fakeLink(f: Fixture, store: Store, peers: string[]): LinkPort {
  const entry = f.entry;
  return {
    agent: entry === undefined ? undefined : {
      peerVector: () => Promise.resolve(entry.vector()),
      syncOnce() {
        store.applyChanges(entry.changesMissingFrom(store.vector()).changes);
        return Promise.resolve();
      },
    },
    meshError: undefined,
    start: () => Promise.resolve(void f.events.push("link start")),
    stop: () => Promise.resolve(void f.events.push("link stop")),
    teardown: () => Promise.resolve(true),
    peerUrls: () => peers.map((machineId) => ({ machineId, url: `http://${machineId}` })),
    evidence: () => Promise.resolve({ handshakes: new Map(), traffic: new Map(), received: new Map() }),
    syncWithAll: () => Promise.resolve({ delivered: peers, failed: [] }),
    admit: () => Promise.resolve({ configured: true }),
  };
}

async function cleanup(f: Fixture): Promise<void> {
  await f.lifecycle.stop();
  f.entry?.close();
  await Deno.remove(f.dir, { recursive: true });
}

async function refusal(promise: Promise<unknown>): Promise<RpcError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof RpcError, `expected an RpcError, got ${error}`);
    return error;
  }
  throw new Error("expected a refusal");
}

Deno.test("found: an uninitialized Machine founds one Cluster, durably, and starts what a participant runs", async () => {
  const f = await fixture();
  try {
    const [a, b] = await Promise.all([
      f.lifecycle.found({ clusterName: "prod", subnet: "10.210.7.0/24" }),
      f.lifecycle.found({ clusterName: "prod" }),
    ]);
    assert.equal(a.phase, "participating");
    assert.equal(b.cluster_id, a.cluster_id, "two concurrent founds found one Cluster");
    assert.deepEqual(await readMachineFile(f.dir), a);
    assert.equal(f.lifecycle.store?.machines.get(a.id)?.subnet, "10.210.7.0/24");
    assert.deepEqual(f.events.filter((e) => !e.startsWith("log")), [
      "network 10.210.7.0/24",
      "publisher start",
      "link start",
      "serving start 10.210.7.1",
    ]);
    const clash = await refusal(f.lifecycle.found({ clusterName: "staging" }));
    assert.equal(clash.code, "conflict");
    assert.match(clash.message, /cluster_name is "prod", not "staging"/);
    assert.equal((await refusal(f.lifecycle.found({ subnet: "10.210.7.0/23" }))).code, "invalid_argument");
  } finally {
    await cleanup(f);
  }
});

Deno.test("join: joining until caught up with the Entry Machine, then participating and serving", async () => {
  const entryId = mintId();
  const clusterId = mintId();
  const entryDir = await Deno.makeTempDir({ prefix: "ployz-entry-" });
  const entry = openStore({ path: join(entryDir, "store.db"), siteId: entryId, clusterId });
  entry.machines.put({ id: entryId, name: "entry", phase: "participating", "cluster_id": clusterId });
  const f = await fixture({ entry });
  try {
    const joined = await f.lifecycle.join({
      "cluster_id": clusterId,
      "cluster_name": "prod",
      subnet: "10.210.2.0/24",
      peers: [{ id: entryId, "public_key": KEY, endpoints: ["192.0.2.1:51820"], subnet: "10.210.1.0/24" }],
    });
    assert.equal(joined.phase, "joining");
    assert.throws(() => f.lifecycle.participatingStore("set a Serving Pointer"), /it is joining/);
    const deadline = Date.now() + 5_000;
    while (f.lifecycle.record.phase !== "participating" && Date.now() < deadline) {
      await sleep(10);
    }
    const record = f.lifecycle.record;
    assert.equal(record.phase, "participating");
    assert.equal(record.bootstrap_peers, undefined);
    assert.deepEqual(await readMachineFile(f.dir), record);
    assert.equal(f.lifecycle.store?.machines.get(entryId)?.name, "entry", "the copy holds the Entry's rows");
    assert.ok(f.events.includes("serving start 10.210.2.1"), "serving starts once caught up");
    assert.ok(
      f.events.indexOf("serving start 10.210.2.1") > f.events.findIndex((e) => e.includes("caught up")),
      "and not before",
    );
    const again = await f.lifecycle.join({
      "cluster_id": clusterId,
      "cluster_name": "prod",
      subnet: "10.210.2.0/24",
      peers: [{ id: entryId, "public_key": KEY, endpoints: [], subnet: "10.210.1.0/24" }],
    });
    assert.equal(again, f.lifecycle.record, "the same join again answers the record");
    const other = await refusal(f.lifecycle.join({
      "cluster_id": mintId(),
      "cluster_name": "other",
      subnet: "10.210.2.0/24",
      peers: [{ id: entryId, "public_key": KEY, endpoints: [], subnet: "10.210.1.0/24" }],
    }));
    assert.equal(other.code, "conflict");
    assert.equal((await refusal(f.lifecycle.found({ clusterName: "other" }))).code, "conflict");
  } finally {
    await cleanup(f);
    await Deno.remove(entryDir, { recursive: true });
  }
});

Deno.test("leave: refuses to drop containers unconfirmed, then removes them and returns to uninitialized", async () => {
  const f = await fixture();
  try {
    assert.match((await refusal(f.lifecycle.leave({}))).message, /not in a Cluster: nothing to leave/);
    const founded = await f.lifecycle.found({});
    f.owned.push({ id: "c1", name: "web-1" });
    const unconfirmed = await refusal(f.lifecycle.leave({}));
    assert.equal(unconfirmed.code, "conflict");
    assert.deepEqual(unconfirmed.details.containers, ["web-1"]);
    assert.equal(f.lifecycle.record.phase, "participating", "a refused leave changes nothing");
    const left = await f.lifecycle.leave({ "confirm_data_loss": "m1" });
    assert.deepEqual(left.removed_containers, ["web-1"]);
    assert.equal(left.interface_removed, true);
    const record = f.lifecycle.record;
    assert.deepEqual(record, { id: founded.id, name: "m1", phase: "uninitialized", "public_key": KEY });
    assert.deepEqual(await readMachineFile(f.dir), record);
    assert.equal(f.lifecycle.store, undefined);
    await assert.rejects(Deno.stat(storePath(f.dir)), Deno.errors.NotFound);
    const kept = [];
    for await (const e of Deno.readDir(f.dir)) if (e.name.startsWith("store.db.left-")) kept.push(e.name);
    assert.equal(kept.length, 1, "the old copy is kept aside");
    for (const event of ["serving stop", "publisher stop", "remove c1", "link stop"]) {
      assert.ok(f.events.includes(event), `missing "${event}"`);
    }
  } finally {
    await cleanup(f);
  }
});

Deno.test("removed: told by a peer, the Machine records who retired it, lists it, and can still leave", async () => {
  const f = await fixture();
  try {
    const founded = await f.lifecycle.found({});
    const notice = {
      machineId: founded.id,
      retiredBy: "mother",
      retiredByName: "m0",
      retiredAt: "2026-12-02T01:00:00Z",
    };
    await f.lifecycle.noteRemoved(notice);
    const removed = f.lifecycle.record.removed;
    assert.equal(removed?.by, "mother");
    assert.equal(removed?.by_name, "m0");
    assert.equal(removed?.at, "2026-12-02T01:00:00Z");
    assert.deepEqual((await readMachineFile(f.dir))?.removed, removed, "durably");
    assert.deepEqual((await f.lifecycle.membership()).removed, removed);
    await f.lifecycle.noteRemoved({ ...notice, retiredBy: "other" });
    assert.deepEqual(f.lifecycle.record.removed, removed, "the first notice stays");
    await f.lifecycle.leave({});
    const record = f.lifecycle.record;
    assert.equal(record.phase, "uninitialized");
    assert.equal(record.id, founded.id, "a reset, not a leave, mints a new id");
    assert.equal(record.removed, undefined);
    assert.equal(record.public_key, KEY);
  } finally {
    await cleanup(f);
  }
});

Deno.test("resume: a restarted daemon reopens the Cluster its record names", async () => {
  const first = await fixture();
  const founded = await first.lifecycle.found({ clusterName: "prod" });
  await first.lifecycle.stop();
  try {
    const again = new ClusterLifecycle(founded, first.deps);
    again.resume();
    try {
      assert.equal(again.store?.machines.get(founded.id)?.cluster_id, founded.cluster_id);
      assert.equal((await again.membership()).machines.length, 1);
    } finally {
      await again.stop();
    }
    const fresh = await fixture();
    fresh.lifecycle.resume();
    assert.equal(fresh.lifecycle.store, undefined, "an uninitialized record opens nothing");
    await cleanup(fresh);
  } finally {
    await Deno.remove(first.dir, { recursive: true });
  }
});

Deno.test("retire: a gone Machine's rows leave the membership once confirmed; it is never admitted again", async () => {
  const f = await fixture();
  const goneId = mintId();
  try {
    const founded = await f.lifecycle.found({});
    const store = f.lifecycle.store!;
    const gone = openStore({ path: ":memory:", siteId: goneId, clusterId: founded.cluster_id! });
    gone.machines.put({ id: goneId, name: "m3", subnet: "10.210.3.0/24" });
    gone.containers.put({
      id: "c9",
      "machine_id": goneId,
      project: "p",
      service: "web",
      name: "p-web-1",
      image: "i",
    });
    store.applyChanges(gone.changesMissingFrom(store.vector()).changes);
    gone.close();
    assert.equal((await f.lifecycle.membership()).machines.length, 2);

    const self = await refusal(f.lifecycle.retire({ "machine_id": founded.id }));
    assert.match(self.message, /cannot retire itself/);
    // A Machine that answers a probe is alive, whatever its membership says.
    const probed: string[] = [];
    f.deps.probePeer = (machineId) => Promise.resolve(void probed.push(machineId)).then(() => true);
    const alive = await refusal(f.lifecycle.retire({ "machine_id": goneId, "confirm_data_loss": "m3" }));
    assert.equal(alive.code, "conflict");
    assert.match(
      alive.message,
      /^Refusing to retire Machine "m3" as gone: it answered a probe from "m1" over the mesh/,
    );
    assert.deepEqual(probed, [goneId]);
    assert.equal(store.retiredIds().size, 0, "a refused retire writes nothing");
    f.deps.probePeer = () => Promise.reject(new Error("connection refused"));
    const unconfirmed = await refusal(f.lifecycle.retire({ "machine_id": goneId }));
    assert.equal(unconfirmed.code, "conflict");
    assert.match(
      unconfirmed.message,
      /Machine "m3" held 1 thing\(s\) .*container p-web-1.*confirm the Data Loss/,
    );
    assert.equal(store.retiredIds().size, 0, "a refused retire writes nothing");

    const retired = await f.lifecycle.retire({ "machine_id": goneId, "confirm_data_loss": "m3" });
    assert.deepEqual(retired.containers, ["p-web-1"]);
    assert.match(
      retired.observed!,
      /^"m1" never heard from it, and it did not answer a probe over the mesh \(connection refused after \d+ ms\)$/,
    );
    assert.equal(retired.subnet, "10.210.3.0/24");
    assert.deepEqual((await f.lifecycle.membership()).machines.map((m) => m.name), ["m1"]);
    assert.deepEqual(store.liveContainers(), []);
    assert.ok(store.containers.get("c9") !== undefined, "its rows stay, only its owner could delete them");
    const back = await refusal(
      f.lifecycle.admit({ machineId: goneId, publicKey: KEY, subnet: "10.210.3.0/24", endpoints: [] }),
    );
    assert.match(back.message, /was removed from this Cluster while gone .*reset it/);
  } finally {
    await cleanup(f);
  }
});
