import assert from "node:assert/strict";
import type { ContainerSpec } from "../deploy/mod.ts";
import { RpcError } from "../rpc/mod.ts";
import type { Exec } from "../volume/mod.ts";
import { startVolumeRuntime } from "./volume_runtime.ts";

const spec: ContainerSpec = {
  name: "db-1",
  creationKey: "ck",
  project: "shop",
  service: "db",
  deployment: "d1",
  slot: "1",
  image: "x",
  mounts: [{ type: "volume", source: "shop_data", target: "/data", provisionedBytes: 2 ** 26 }],
};

const noExec: Exec = {
  run: () => Promise.reject(new Error("no program runs here")),
  stream: () => {
    throw new Error("no program runs here");
  },
};

Deno.test("a Machine without a Pool refuses a Provisioned Volume, naming it and how to bind one", async () => {
  const dataDir = await Deno.makeTempDir();
  const runtime = await startVolumeRuntime({
    dataDir,
    exec: noExec,
    self: () => ({ id: "m1id", name: "m1" }),
    store: () => undefined,
    log: () => {},
  });
  try {
    await assert.rejects(
      runtime.prepare(spec),
      (e: RpcError) =>
        e instanceof RpcError && e.code === "unsupported" && e.message.includes('"shop_data"') &&
        e.message.includes("ployz machine pool --set btrfs --machine m1"),
    );
    // A spec without Provisioned Volumes needs no Pool.
    assert.deepEqual(await runtime.prepare({ ...spec, mounts: [] }), {});
    const shown = await runtime.handlers.machinePool!({}, { signal: AbortSignal.timeout(1000) } as never);
    assert.equal(shown.pool, null);
    assert.deepEqual(shown.volumes, []);
    // A confirmed removal on a Machine without a Pool has no copy to destroy.
    assert.equal(await runtime.remove("shop_data", "shop"), false);
    await assert.rejects(runtime.remove("../etc", "shop"), /name|Volume/);
  } finally {
    await runtime.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("a pool.json that names no Pool is reported, not fatal", async () => {
  const dataDir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dataDir}/pool.json`, `{"kind": "ext4"}`);
  const lines: string[] = [];
  const runtime = await startVolumeRuntime({
    dataDir,
    exec: noExec,
    self: () => ({ id: "m1id", name: "m1" }),
    store: () => undefined,
    log: (line) => lines.push(line),
  });
  try {
    assert.match(lines.join("\n"), /names no Pool/);
    await assert.rejects(
      runtime.prepare(spec),
      (e: RpcError) => e.code === "unsupported" && /names no Pool/.test(e.message),
    );
  } finally {
    await runtime.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});
