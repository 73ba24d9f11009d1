import assert from "node:assert/strict";
import type { ContainerSpec } from "../deploy/mod.ts";
import { type CopyWire, RpcError } from "../rpc/mod.ts";
import type { Exec, Pool } from "../volume/mod.ts";
import { tempDir } from "../util/testing/mod.ts";
import { startVolumeRuntime, type VolumeHost, type VolumeRuntime } from "./volume_runtime.ts";

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

/** The volume runtime of Machine m1 on `dataDir`, running no program and storing nothing; stopped at scope end. */
async function started(
  dataDir: string,
  host: Partial<VolumeHost> = {},
): Promise<VolumeRuntime & AsyncDisposable> {
  const runtime = await startVolumeRuntime({
    dataDir,
    exec: noExec,
    self: () => ({ id: "m1id", name: "m1" }),
    store: () => undefined,
    log: () => {},
    ...host,
  });
  return { ...runtime, [Symbol.asyncDispose]: () => runtime.stop() };
}

Deno.test("a Machine without a Pool refuses a Provisioned Volume, naming it and how to bind one", async () => {
  await using dir = await tempDir();
  await using runtime = await started(dir.path);
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
});

Deno.test("a pool.json that names no Pool is reported, not fatal", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/pool.json`, `{"kind": "ext4"}`);
  const lines: string[] = [];
  await using runtime = await started(dir.path, { log: (line) => lines.push(line) });
  assert.match(lines.join("\n"), /names no Pool/);
  await assert.rejects(
    runtime.prepare(spec),
    (e: RpcError) => e.code === "unsupported" && /names no Pool/.test(e.message),
  );
});

/** An in-memory Pool whose receives wait until `release()`; it counts receives running at once. */
function slowPool(): { pool: Pool; release(): void; receiving: number; most: number } {
  const held = new Map<string, { writable: boolean; snapshots: string[] }>();
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const state = {
    receiving: 0,
    most: 0,
    release: () => open(),
    pool: {
      kind: "btrfs",
      where: "/fake",
      mountPath: (v: string) => `/fake/${v}`,
      create: () => Promise.resolve(),
      snapshot: () => Promise.resolve(),
      inspect: (v: string) => {
        const h = held.get(v);
        return Promise.resolve(h === undefined ? undefined : { name: v, ...h, snapshots: [...h.snapshots] });
      },
      list: () => Promise.resolve([...held.keys()]),
      send: () => {
        throw new Error("not a sender");
      },
      async receive(v: string, snapshot: string, input: ReadableStream<Uint8Array>) {
        state.receiving++;
        state.most = Math.max(state.most, state.receiving);
        try {
          for await (const _ of input) { /* drained */ }
          await gate;
          const h = held.get(v) ?? { writable: false, snapshots: [] };
          h.snapshots.push(snapshot);
          held.set(v, h);
        } finally {
          state.receiving--;
        }
      },
      promote: () => Promise.resolve(),
      demote: () => Promise.resolve(),
      destroySnapshot: () => Promise.resolve(),
      destroy: (v: string) => Promise.resolve(void held.delete(v)),
      resize: () => Promise.resolve(),
      usage: () => Promise.resolve({ usedBytes: 0, sizeBytes: 2 ** 26 }),
      space: () => Promise.resolve({ totalBytes: 2 ** 30, freeBytes: 2 ** 30 }),
    } as Pool,
  };
  return state;
}

Deno.test("a request queued behind a killed run's receive is told busy: never a second receive, never a fence beside it", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/pool.json`, JSON.stringify({ kind: "btrfs", root: "/fake" }));
  // m1's send route on loopback: a few bytes of "stream".
  await using sender = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => new Response(new Uint8Array([1, 2, 3])),
  );
  const fake = slowPool();
  await using runtime = await started(dir.path, {
    self: () => ({ id: "m2id", name: "m2" }),
    resolve: () => ({ name: "m1", hostname: "127.0.0.1", port: sender.addr.port }),
    openPool: () => Promise.resolve(fake.pool),
  });
  const ctx = { signal: AbortSignal.timeout(10_000) } as never;
  const ask = (gen: number, wanted: CopyWire, expected: CopyWire = { role: "none" }) =>
    runtime.handlers.setVolumeCopy!({
      volume: "shop_data",
      expected,
      wanted,
      gen,
      "source_machine_id": "m1id",
      "size_bytes": 2 ** 26,
    }, ctx);
  try {
    // The killed run's receive (gen 1) and, before it started, the next run's requests (gen 2): a receive of its
    // own and a fence. Both arrive before the first is decided.
    const first = ask(1, { role: "mirror", snapshot: "g1-a" });
    const second = ask(2, { role: "mirror", snapshot: "g2-b" });
    const fence = ask(2, { role: "none" });
    await assert.rejects(second, (e: RpcError) => e.code === "busy", "a second receive is refused busy");
    await assert.rejects(
      fence,
      (e: RpcError) => e.code === "busy",
      "a fence beside a receive is refused busy",
    );
    fake.release();
    const answered = await first;
    assert.ok(["busy", "done"].includes(answered.outcome), answered.outcome);
    assert.equal(fake.most, 1, "one receive at a time");
    // Once it ended the copy is what it left, and the next run fences at that.
    let done = answered;
    for (let i = 0; i < 20 && done.outcome === "busy"; i++) {
      done = await ask(1, { role: "mirror", snapshot: "g1-a" });
    }
    assert.deepEqual(done.copy, { role: "mirror", snapshot: "g1-a" });
    const fenced = await ask(2, { role: "mirror", snapshot: "g1-a" }, { role: "mirror", snapshot: "g1-a" });
    assert.equal(fenced.outcome, "at_want");
    assert.equal(fenced.floor, 2);
  } finally {
    // A receive still held would keep the runtime from stopping.
    fake.release();
  }
});
