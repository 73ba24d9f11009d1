import { deepEqual } from "node:assert/strict";
import { routeMeshRequest } from "./cluster_link_listener.ts";

const quarantine = [{ machineId: "gone", publicKey: "k", address: "10.210.9.1/32" }];
const caller = (address: string): string | undefined => address === "10.210.1.1" ? "b" : undefined;

Deno.test("routeMeshRequest: a retired Machine is told it was removed, in RPC's error body on an RPC path", () => {
  deepEqual(
    routeMeshRequest("/rpc/ployz.machine.status.v1", "10.210.9.1", { quarantine, caller, servesRpc: true }),
    { kind: "removed", machineId: "gone", rpc: true },
  );
  deepEqual(
    routeMeshRequest("/sync/changes", "10.210.9.1", { quarantine, caller, servesRpc: true }),
    { kind: "removed", machineId: "gone", rpc: false },
  );
});

Deno.test("routeMeshRequest: store sync only from the Cluster's Machines; Machine RPC checks its caller itself", () => {
  deepEqual(routeMeshRequest("/sync/changes", "10.210.1.1", { quarantine, caller, servesRpc: true }), {
    kind: "sync",
    caller: "b",
  });
  deepEqual(routeMeshRequest("/sync/changes", "10.99.0.1", { quarantine, caller, servesRpc: true }), {
    kind: "unauthenticated",
  });
  deepEqual(
    routeMeshRequest("/rpc/ployz.machine.status.v1", "10.99.0.1", { quarantine, caller, servesRpc: true }),
    {
      kind: "rpc",
    },
  );
  // Without Machine RPC on the mesh, an RPC path reaches the sync app (which knows no such path).
  deepEqual(
    routeMeshRequest("/rpc/ployz.machine.status.v1", "10.99.0.1", { quarantine, caller, servesRpc: false }),
    { kind: "sync", caller: undefined },
  );
});
