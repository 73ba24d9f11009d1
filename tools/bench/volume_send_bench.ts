// Volume send throughput: lib/volume's btrfs Pool streaming a Snapshot from one Pool into another through Deno
// (Pool.send's stdout piped into Pool.receive's stdin, as a daemon pipes the stream it pulls over the mesh) against
// `btrfs send | btrfs receive` piped by the shell between the same two Pools, full (200 MiB) and incremental
// (50 MiB changed). Two btrfs filesystems on loop files; needs root. Everything made here is removed at the end.
import { join } from "node:path";
import { attachLoopPool, hostExec, openBtrfsPool, type Pool } from "../../lib/volume/mod.ts";

const MiB = 2 ** 20;
const exec = hostExec();
const dir = await Deno.makeTempDir({ prefix: "ployz-send-bench-" });
const sides = ["a", "b"].map((n) => ({ file: join(dir, `${n}.img`), mountPoint: join(dir, n) }));
const pools: Pool[] = [];
for (const side of sides) {
  await attachLoopPool(exec, { ...side, sizeBytes: 1024 * MiB });
  pools.push(await openBtrfsPool(side.mountPoint, exec));
}
const [from, to] = pools;

async function writeRandom(path: string, bytes: number): Promise<void> {
  const file = await Deno.open(path, { write: true, create: true, truncate: true });
  const chunk = new Uint8Array(4 * MiB);
  for (let at = 0; at < bytes; at += chunk.length) {
    for (let i = 0; i < chunk.length; i += 65536) crypto.getRandomValues(chunk.subarray(i, i + 65536));
    await file.write(chunk);
  }
  file.close();
}

await from.create("bench", 900 * MiB);
await writeRandom(join(from.mountPath("bench"), "full"), 200 * MiB);
await from.snapshot("bench", "s1");
await writeRandom(join(from.mountPath("bench"), "more"), 50 * MiB);
await from.snapshot("bench", "s2");

async function throughPool(snapshot: string, base?: string): Promise<void> {
  const sent = from.send("bench", snapshot, base);
  await Promise.all([to.receive("bench", snapshot, sent.output), sent.done]);
}

async function byHand(snapshot: string, base?: string): Promise<void> {
  const src = join(sides[0].mountPoint, "snapshots", "bench");
  const dst = join(sides[1].mountPoint, "snapshots", "bench");
  await Deno.mkdir(dst, { recursive: true });
  const parent = base === undefined ? "" : `-p "${src}/${base}"`;
  await exec.run(["sh", "-c", `btrfs send -q ${parent} "${src}/${snapshot}" | btrfs receive "${dst}"`]);
}

// Before each full run the receiver holds nothing; before each incremental run it holds only s1.
async function reset(keepBase: boolean): Promise<void> {
  await to.destroySnapshot("bench", "s2").catch(() => {});
  if (!keepBase) await to.destroySnapshot("bench", "s1").catch(() => {});
  if (keepBase && !(await to.inspect("bench"))?.snapshots.includes("s1")) await throughPool("s1");
  await exec.run(["btrfs", "filesystem", "sync", sides[1].mountPoint]);
}

const cases: {
  name: string;
  group: string;
  baseline: boolean;
  run: () => Promise<void>;
  keepBase: boolean;
  mib: number;
}[] = [
  {
    name: "btrfs send | btrfs receive (shell pipe), full",
    group: "full",
    baseline: true,
    run: () => byHand("s1"),
    keepBase: false,
    mib: 200,
  },
  {
    name: "Pool.send → Pool.receive (through Deno), full",
    group: "full",
    baseline: false,
    run: () => throughPool("s1"),
    keepBase: false,
    mib: 200,
  },
  {
    name: "btrfs send | btrfs receive (shell pipe), incremental",
    group: "incremental",
    baseline: true,
    run: () => byHand("s2", "s1"),
    keepBase: true,
    mib: 50,
  },
  {
    name: "Pool.send → Pool.receive (through Deno), incremental",
    group: "incremental",
    baseline: false,
    run: () => throughPool("s2", "s1"),
    keepBase: true,
    mib: 50,
  },
];

for (const c of cases) {
  Deno.bench({
    name: c.name,
    group: `volume send ${c.group}`,
    baseline: c.baseline,
    n: 5,
    warmup: 1,
    async fn(bench) {
      await reset(c.keepBase);
      bench.start();
      const started = performance.now();
      await c.run();
      const ms = performance.now() - started;
      bench.end();
      console.log(
        `${c.name}: ${c.mib} MiB in ${ms.toFixed(0)} ms = ${(c.mib / (ms / 1000)).toFixed(0)} MiB/s`,
      );
    },
  });
}

globalThis.addEventListener("unload", () => {
  // Take the Pools down even when a case failed.
  const down = (side: { file: string; mountPoint: string }): void => {
    new Deno.Command("umount", { args: [side.mountPoint] }).outputSync();
    const loops = new TextDecoder().decode(
      new Deno.Command("losetup", { args: ["-j", side.file] }).outputSync().stdout,
    );
    for (const line of loops.split("\n")) {
      const device = line.split(":")[0];
      if (device.startsWith("/dev/loop")) new Deno.Command("losetup", { args: ["-d", device] }).outputSync();
    }
  };
  for (const side of sides) down(side);
  Deno.removeSync(dir, { recursive: true });
});
