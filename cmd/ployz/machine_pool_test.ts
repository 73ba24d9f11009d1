import assert from "node:assert/strict";
import { type MachinePoolResponse, RpcError } from "../../lib/rpc/mod.ts";
import { askPool, poolTable } from "./machine_pool.ts";

const answer: MachinePoolResponse = {
  "machine_id": "id1",
  "machine_name": "m1",
  pool: { kind: "btrfs", where: "/p", "total_bytes": 2 ** 30, "free_bytes": 2 ** 29 },
  volumes: [],
};

function client(served: string[], reply: (req: { "default_size_bytes"?: number }) => MachinePoolResponse) {
  const asked: unknown[] = [];
  return {
    asked,
    requireCapability(capability: string): Promise<void> {
      if (served.includes(capability)) return Promise.resolve();
      return Promise.reject(
        new RpcError("unsupported", `Machine "m1" does not serve "${capability}": upgrade its daemon`),
      );
    },
    machinePool(req: { "default_size_bytes"?: number }): Promise<MachinePoolResponse> {
      asked.push(req);
      return Promise.resolve(reply(req));
    },
  };
}

Deno.test("machine pool: a daemon that predates Pools is refused by capability, before any call", async () => {
  const old = client([], () => answer);
  await assert.rejects(
    askPool(old, "m1", {}, AbortSignal.timeout(1000)),
    (e: RpcError) =>
      e.code === "unsupported" &&
      e.message === `Machine "m1" does not serve "ployz.machine.pool.v1": upgrade its daemon`,
  );
  assert.deepEqual(old.asked, []);
});

Deno.test("machine pool --default-size: kept, shown, and refused by name when the daemon ignores it", async () => {
  const current = client(["ployz.machine.pool.v1"], (req) => ({
    ...answer,
    pool: { ...answer.pool!, "default_size_bytes": req.default_size_bytes },
  }));
  const kept = await askPool(current, "m1", { defaultSize: 2 ** 27 }, AbortSignal.timeout(1000));
  assert.deepEqual(current.asked, [{ "default_size_bytes": 2 ** 27 }]);
  assert.match(
    poolTable([{ machine: "m1", value: kept }]),
    /DEFAULT[\s\S]*m1\s+btrfs\s+\/p\s+1024\.0MiB\s+512\.0MiB\s+128\.0MiB/,
  );
  // A daemon that serves Pools but predates the default size answers without it.
  const older = client(["ployz.machine.pool.v1"], () => answer);
  await assert.rejects(
    askPool(older, "m1", { defaultSize: 2 ** 27 }, AbortSignal.timeout(1000)),
    /Machine "m1" did not keep the default Volume size: its daemon predates it; upgrade it/,
  );
  // Showing asks nothing of the default.
  assert.equal(
    (await askPool(older, "m1", {}, AbortSignal.timeout(1000))).pool?.default_size_bytes,
    undefined,
  );
});
