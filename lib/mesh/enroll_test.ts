import { deepEqual, equal, ok, rejects } from "node:assert/strict";
import { advertisedCapabilities, connectMachine, createRpcApp, type RpcHandlers } from "../rpc/mod.ts";
import { type AllocationHistory, enrollMachine } from "./enroll.ts";
import { MeshError } from "./errors.ts";

const KEY_E = "EEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEA=";
const KEY_J = "JJJJJJJJJJJJJJJJJJJJJJJJJJJJJJJJJJJJJJJJJJA=";

function client(routes: RpcHandlers, label: string) {
  const handlers: RpcHandlers = {
    ...routes,
    describeContract: () =>
      Promise.resolve({
        "machine_id": label,
        "machine_name": label,
        "protocol_major": 1,
        "daemon_version": "0.1.0",
        capabilities: advertisedCapabilities(handlers),
      }),
  };
  const app = createRpcApp(handlers);
  return connectMachine({ fetch: (r) => Promise.resolve(app.fetch(r)), label });
}

function memoryHistory(events: string[]): AllocationHistory & { saved: { subnet: string; state: string }[] } {
  const saved: { subnet: string; machineId: string; machineName: string; state: string }[] = [];
  return {
    saved,
    list: () => [...saved],
    save: (a) => {
      events.push(`save ${a.subnet} ${a.state}`);
      saved.push(a);
    },
  };
}

/** The Entry Machine m1 and a peer m2 at `<net>.0` and `<net>.1`. */
function entryHandlers(events: string[], net = "10.210"): RpcHandlers {
  const machine = {
    id: "e",
    name: "m1",
    phase: "participating",
    "cluster_id": "c1",
    "cluster_name": "lab",
    subnet: `${net}.0.0/24`,
    "public_key": KEY_E,
  };
  return {
    status: () => Promise.resolve({ machine, docker: { reachable: true }, "observed_at": "now" }),
    listMachines: () =>
      Promise.resolve({
        observer: { "machine_id": "e", "machine_name": "m1" },
        "observed_at": "now",
        machines: [
          {
            id: "e",
            name: "m1",
            subnet: `${net}.0.0/24`,
            endpoints: ["192.0.2.11:51820"],
            "public_key": KEY_E,
            membership: "up",
          },
          { id: "x", name: "m2", subnet: `${net}.1.0/24`, endpoints: [], membership: "up" },
          ...(events.some((e) => e.startsWith("join"))
            ? [{ id: "j", name: "m3", endpoints: [], membership: "up" }]
            : []),
        ],
      }),
    admitPeer: (req) => {
      events.push(`admit ${req.subnet}`);
      return Promise.resolve({ "machine_id": "e", configured: true });
    },
  };
}

function joinerHandlers(events: string[], fail: { join: boolean }): RpcHandlers {
  let phase = "uninitialized";
  const machine = () => ({ id: "j", name: "vm", phase, "public_key": KEY_J });
  return {
    status: () => Promise.resolve({ machine: machine(), docker: { reachable: true }, "observed_at": "now" }),
    joinMachine: (req) => {
      events.push(`join ${req.subnet} via ${req.peers[0].id}`);
      if (fail.join) return Promise.reject(new Error("disk full"));
      phase = "participating";
      return Promise.resolve({
        machine: { ...machine(), "cluster_id": req.cluster_id, subnet: req.subnet },
        endpoints: [],
      });
    },
  };
}

Deno.test("enrollMachine saves the pick before publishing it, keeps it after a failure and reuses it on retry", async () => {
  const events: string[] = [];
  const history = memoryHistory(events);
  history.save({ subnet: "10.210.2.0/24", machineId: "other", machineName: "gone", state: "saved" });
  const fail = { join: true };
  using entry = client(entryHandlers(events), "m1");
  using joiner = client(joinerHandlers(events, fail), "vm");
  await rejects(enrollMachine({ entry, joiner, history, machineName: "m3", timeoutMs: 1_000 }));
  // Observed 10.210.0/1 and remembered 10.210.2 are avoided; the pick is saved before the admit and the join.
  deepEqual(events, [
    "save 10.210.2.0/24 saved",
    "save 10.210.3.0/24 saved",
    "admit 10.210.3.0/24",
    "join 10.210.3.0/24 via e",
  ]);
  fail.join = false;
  const result = await enrollMachine({ entry, joiner, history, machineName: "m3", timeoutMs: 5_000 });
  equal(result.subnet, "10.210.3.0/24");
  equal(result.reusedAllocation, true);
  equal(result.participating, true);
  equal(result.entryHoldsRow, true);
  deepEqual(history.saved.map((a) => `${a.subnet} ${a.state}`), [
    "10.210.2.0/24 saved",
    "10.210.3.0/24 saved",
    "10.210.3.0/24 published",
  ]);
});

Deno.test("enrollMachine refuses an Entry Machine outside a Cluster and a joiner from another Cluster", async () => {
  const events: string[] = [];
  using lonely = client({
    status: () =>
      Promise.resolve({
        machine: { id: "e", name: "m1", phase: "uninitialized" },
        docker: { reachable: true },
        "observed_at": "now",
      }),
  }, "m1");
  using joiner = client(joinerHandlers(events, { join: false }), "vm");
  const error = await enrollMachine({ entry: lonely, joiner, history: memoryHistory(events) }).catch((e) =>
    e
  );
  ok(error instanceof MeshError);
  equal(error.code, "conflict");
  using entry = client(entryHandlers(events), "m1");
  using foreign = client({
    status: () =>
      Promise.resolve({
        machine: {
          id: "f",
          name: "m9",
          phase: "participating",
          "cluster_id": "c2",
          "cluster_name": "other",
          "public_key": KEY_J,
        },
        docker: { reachable: true },
        "observed_at": "now",
      }),
  }, "m9");
  const refused = await enrollMachine({ entry, joiner: foreign, history: memoryHistory(events) }).catch((e) =>
    e
  );
  equal(refused.code, "conflict");
  ok(/another Cluster "other"/.test(refused.message), refused.message);
  deepEqual(events, []);
});

Deno.test("enrollMachine allocates in the Entry Machine's Cluster network when it was founded outside the default", async () => {
  const events: string[] = [];
  using entry = client(entryHandlers(events, "10.217"), "m1");
  using joiner = client(joinerHandlers(events, { join: false }), "vm");
  const result = await enrollMachine({ entry, joiner, history: memoryHistory(events), timeoutMs: 5_000 });
  equal(result.subnet, "10.217.2.0/24");
  deepEqual(events.slice(0, 3), [
    "save 10.217.2.0/24 saved",
    "admit 10.217.2.0/24",
    "join 10.217.2.0/24 via e",
  ]);
});

Deno.test("enrollMachine says the join was taken after the join call and before the wait for the joiner", async () => {
  const events: string[] = [];
  const history = memoryHistory(events);
  using entry = client(entryHandlers(events), "m1");
  using joiner = client(joinerHandlers(events, { join: false }), "vm");
  const joined = () => events.push("joined");
  const result = await enrollMachine({ entry, joiner, history, machineName: "m3", timeoutMs: 5_000, joined });
  equal(result.participating, true);
  deepEqual(events.slice(-3), ["join 10.210.2.0/24 via e", "save 10.210.2.0/24 published", "joined"]);
  // Not called when the join itself fails: nothing was taken.
  const failed: string[] = [];
  using refusing = client(joinerHandlers(failed, { join: true }), "vm");
  await rejects(
    enrollMachine({
      entry,
      joiner: refusing,
      history,
      timeoutMs: 1_000,
      joined: () => failed.push("joined"),
    }),
  );
  ok(!failed.includes("joined"));
});
