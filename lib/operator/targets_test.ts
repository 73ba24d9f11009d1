import { deepEqual, equal, match, rejects } from "node:assert/strict";
import {
  CAPABILITIES,
  connectMachine,
  createRpcApp,
  type ListedMachine,
  type MachineClient,
} from "../rpc/mod.ts";
import { OperatorError } from "./errors.ts";
import { listTargets } from "./targets.ts";

/** An Entry Machine that answers the three calls listing needs, from a script, over an in-process RPC app. */
function fakeEntry(
  options: { capabilities: string[]; machines: Partial<ListedMachine>[]; phase?: string },
): MachineClient {
  const app = createRpcApp({
    describeContract: () =>
      Promise.resolve({
        "machine_id": "m1-id",
        "machine_name": "m1",
        "protocol_major": 1,
        "daemon_version": "0.1.0",
        capabilities: options.capabilities,
      }),
    status: () =>
      Promise.resolve({
        machine: { id: "m1-id", name: "m1", phase: options.phase ?? "participating" },
        docker: { reachable: true },
        "observed_at": new Date().toISOString(),
      } as never),
    listMachines: () =>
      Promise.resolve({
        observer: { "machine_id": "m1-id", "machine_name": "m1" },
        "observed_at": new Date().toISOString(),
        machines: options.machines.map((m) => ({ endpoints: [], ...m })),
      } as never),
  });
  return connectMachine({ label: "fake m1", fetch: (request) => Promise.resolve(app.fetch(request)) });
}

const THREE = [
  { id: "m1-id", name: "m1", membership: "up" },
  { id: "m2-id", name: "m2", membership: "up" },
  { id: "m3-id", name: "m3", membership: "down" },
] as ListedMachine[];

Deno.test("listTargets: every listed Machine, the Entry Machine first, others reached through it", async () => {
  const entry = fakeEntry({
    capabilities: [CAPABILITIES.listMachines, CAPABILITIES.forward],
    machines: THREE,
  });
  const listed = await listTargets(entry);
  deepEqual(listed.entry, { id: "m1-id", name: "m1" });
  deepEqual(listed.targets.map((t) => [t.name, "client" in t]), [["m1", true], ["m2", true], ["m3", true]]);
  equal(listed.opened.length, 2);
});

Deno.test("listTargets: without forwarding, the others are omissions that say why and how the entry sees them", async () => {
  const listed = await listTargets(fakeEntry({ capabilities: [CAPABILITIES.listMachines], machines: THREE }));
  deepEqual(listed.targets.map((t) => t.name), ["m1", "m2", "m3"]);
  const m3 = listed.targets[2];
  match("omitted" in m3 ? m3.omitted : "", /does not serve "ployz\.machine\.forward\.v1".*"m1" sees it down/);
});

Deno.test("listTargets: --machine narrows by name or id prefix, and an unknown one is not_found", async () => {
  const entry = fakeEntry({
    capabilities: [CAPABILITIES.listMachines, CAPABILITIES.forward],
    machines: THREE,
  });
  deepEqual((await listTargets(entry, { machine: "m2" })).targets.map((t) => t.name), ["m2"]);
  deepEqual((await listTargets(entry, { machine: "m3-i" })).targets.map((t) => t.name), ["m3"]);
  await rejects(listTargets(entry, { machine: "m9" }), (e: OperatorError) => {
    equal(e.code, "not_found");
    match(e.message, /No Machine "m9" among the 3 Machine\(s\) "m1" observes/);
    return true;
  });
});

Deno.test("listTargets: an Entry Machine outside a Cluster is refused when a Cluster is required", async () => {
  const entry = fakeEntry({
    capabilities: [CAPABILITIES.listMachines],
    machines: [],
    phase: "uninitialized",
  });
  deepEqual((await listTargets(entry)).targets.map((t) => t.name), ["m1"], "alone, it is the only target");
  await rejects(
    listTargets(entry, { requireClusterVia: 'context "lab" (root@h:22)' }),
    (e: OperatorError) => {
      equal(e.code, "conflict");
      match(e.message, /^Machine "m1" reached through context "lab" \(root@h:22\) is not in a Cluster/);
      return true;
    },
  );
});
