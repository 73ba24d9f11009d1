import { deepEqual, equal, throws } from "node:assert/strict";
import { RpcError } from "../rpc/mod.ts";
import { leftRecord, refuseRetired, removedRecord } from "./cluster_records.ts";
import type { LocalMachine } from "./machine_file.ts";

const inCluster: LocalMachine = {
  id: "a".repeat(26),
  name: "m1",
  phase: "participating",
  "cluster_id": "c",
  "cluster_name": "default",
  subnet: "10.210.0.0/24",
  "public_key": "pk",
  "created_at": "2026-01-01T00:00:00Z",
  labels: { region: "eu" },
};

Deno.test("leftRecord keeps only the id, name, public key and creation time", () => {
  deepEqual(leftRecord(inCluster), {
    id: inCluster.id,
    name: "m1",
    phase: "uninitialized",
    "public_key": "pk",
    "created_at": "2026-01-01T00:00:00Z",
  });
  deepEqual(leftRecord({ id: "b", name: "m2", phase: "joining" }), {
    id: "b",
    name: "m2",
    phase: "uninitialized",
  });
});

Deno.test("removedRecord says who removed the Machine, when, and when it noticed; the rest is kept", () => {
  const noticed = new Date("2026-01-02T00:00:00Z");
  const full = removedRecord(
    inCluster,
    {
      retiredBy: "z".repeat(26),
      retiredByName: "m3",
      retiredAt: "2026-01-01T12:00:00Z",
    } as Parameters<typeof removedRecord>[1],
    noticed,
  );
  deepEqual(full.removed, {
    by: "z".repeat(26),
    "by_name": "m3",
    at: "2026-01-01T12:00:00Z",
    "noticed_at": "2026-01-02T00:00:00.000Z",
  });
  equal(full.phase, "participating");
  deepEqual(full.labels, { region: "eu" });
  const bare = removedRecord(inCluster, { machineId: inCluster.id, retiredBy: "z" }, noticed);
  deepEqual(bare.removed, { by: "z", "noticed_at": "2026-01-02T00:00:00.000Z" });
});

Deno.test("refuseRetired refuses a retired Machine by name and id, and lets any other pass", () => {
  refuseRetired("b", undefined);
  throws(
    () => refuseRetired("b", { "machine_id": "b", name: "m2", "retired_at": "2026-01-01T00:00:00Z" }),
    (error: unknown) =>
      error instanceof RpcError && error.code === "conflict" &&
      error.message.startsWith(`Machine "m2" (b) was removed from this Cluster while gone`) &&
      error.message.includes("2026-01-01T00:00:00Z"),
  );
});
