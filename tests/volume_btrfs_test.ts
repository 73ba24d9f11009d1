// The btrfs Pool on real btrfs: two Pools on loop files (two filesystems, as on two Machines), a Volume created
// with a qgroup limit, Snapshots sent full and incrementally from one to the other, a corrupt and a truncated
// stream refused with nothing kept, the received copy promoted with the same bytes, and everything taken down.
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  attachLoopPool,
  detachLoopPool,
  hostExec,
  loopDevicesOf,
  openBtrfsPool,
  type Pool,
  VolumeError,
} from "../lib/volume/mod.ts";
import { needs } from "./support/needs.ts";

const MiB = 2 ** 20;

async function sha256(path: string): Promise<string> {
  const bytes = await Deno.readFile(path);
  return Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)))
    .map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function writeRandom(path: string, bytes: number): Promise<void> {
  const data = new Uint8Array(bytes);
  for (let at = 0; at < bytes; at += 65536) {
    crypto.getRandomValues(data.subarray(at, Math.min(bytes, at + 65536)));
  }
  await Deno.writeFile(path, data);
}

async function transfer(
  from: Pool,
  to: Pool,
  volume: string,
  snapshot: string,
  base?: string,
): Promise<void> {
  const sent = from.send(volume, snapshot, base);
  await Promise.all([to.receive(volume, snapshot, sent.output), sent.done]);
}

Deno.test(
  needs(["root", "command:btrfs", "command:mkfs.btrfs", "command:losetup"], {
    name: "btrfs Pool: create with a limit, send full and incremental, refuse bad streams, promote, destroy",
    async fn(t) {
      const exec = hostExec();
      const dir = await Deno.makeTempDir({ prefix: "ployz-pool-" });
      const sides = ["a", "b"].map((n) => ({ file: join(dir, `${n}.img`), mountPoint: join(dir, n) }));
      try {
        const [a, b] = await Promise.all(sides.map(async (side) => {
          await attachLoopPool(exec, { ...side, sizeBytes: 256 * MiB });
          return await openBtrfsPool(side.mountPoint, exec);
        }));

        await t.step("create: a subvolume limited to its size; writes past it fail", async () => {
          await a.create("db", 32 * MiB);
          await assert.rejects(a.create("db", 32 * MiB), (e: VolumeError) => e.code === "conflict");
          await writeRandom(join(a.mountPath("db"), "data"), 8 * MiB);
          const usage = await a.usage("db");
          assert.equal(usage.sizeBytes, 32 * MiB);
          assert(usage.usedBytes >= 8 * MiB && usage.usedBytes < 9 * MiB, `used ${usage.usedBytes}`);
          await assert.rejects(writeRandom(join(a.mountPath("db"), "big"), 40 * MiB));
          await Deno.remove(join(a.mountPath("db"), "big"));
          await assert.rejects(a.resize("db", 4 * MiB), (e: VolumeError) => e.code === "invalid_argument");
          const space = await a.space();
          assert(space.totalBytes === 256 * MiB && space.freeBytes > 100 * MiB, JSON.stringify(space));
        });

        const digests: string[] = [];
        await t.step("send full, then incremental, into the other Pool as a Mirror", async () => {
          await a.snapshot("db", "g1-1");
          digests.push(await sha256(join(a.mountPath("db"), "data")));
          await transfer(a, b, "db", "g1-1");
          await writeRandom(join(a.mountPath("db"), "data"), 6 * MiB);
          await a.snapshot("db", "g1-2");
          digests.push(await sha256(join(a.mountPath("db"), "data")));
          await transfer(a, b, "db", "g1-2", "g1-1");
          assert.deepEqual(await b.inspect("db"), {
            name: "db",
            writable: false,
            snapshots: ["g1-1", "g1-2"],
          });
          assert.deepEqual(await a.inspect("db"), {
            name: "db",
            writable: true,
            snapshots: ["g1-1", "g1-2"],
          });
          assert.deepEqual(await b.list(), ["db"]);
        });

        await t.step("a corrupt or truncated stream is refused and leaves nothing", async () => {
          await a.snapshot("db", "g1-3");
          await assert.rejects(
            b.receive("db", "g1-3", new Response("not a btrfs stream").body!),
            (e: VolumeError) => e.code === "unavailable" && e.message.includes("db@g1-3"),
          );
          const sent = a.send("db", "g1-3", "g1-1");
          const bytes = new Uint8Array(await new Response(sent.output).arrayBuffer());
          await sent.done;
          await assert.rejects(
            b.receive("db", "g1-3", new Response(bytes.subarray(0, bytes.length >> 1)).body!),
          );
          assert.deepEqual((await b.inspect("db"))?.snapshots, ["g1-1", "g1-2"]);
          const left = await Array.fromAsync(Deno.readDir(join(b.where, "snapshots", "db")));
          assert.deepEqual(left.map((e) => e.name).sort(), ["g1-1", "g1-2"]);
          // The whole stream still lands after the failed tries.
          await b.receive("db", "g1-3", new Response(bytes).body!);
          assert.deepEqual((await b.inspect("db"))?.snapshots, ["g1-1", "g1-2", "g1-3"]);
          await assert.rejects(
            b.receive("db", "g1-3", new Response(bytes).body!),
            (e: VolumeError) => e.code === "conflict",
          );
        });

        await t.step("promote the Mirror: writable, limited, the same bytes; demote the source", async () => {
          await b.promote("db", "g1-2", 48 * MiB);
          assert.equal(await sha256(join(b.mountPath("db"), "data")), digests[1]);
          assert.equal((await b.usage("db")).sizeBytes, 48 * MiB);
          await Deno.writeTextFile(join(b.mountPath("db"), "after"), "written on b");
          await a.demote("db");
          assert.deepEqual(await a.inspect("db"), {
            name: "db",
            writable: false,
            snapshots: ["g1-1", "g1-2", "g1-3"],
          });
          // The reverse direction: b's new Snapshot goes back to a incrementally from their common g1-2.
          await b.snapshot("db", "g2-1");
          await transfer(b, a, "db", "g2-1", "g1-2");
          await a.promote("db", "g2-1", 32 * MiB);
          assert.equal(await Deno.readTextFile(join(a.mountPath("db"), "after")), "written on b");
          assert.equal(await sha256(join(a.mountPath("db"), "data")), digests[1]);
        });

        await t.step("bad names never reach btrfs", () => {
          for (const bad of ["../etc", "a/b", "-p", "Upper"]) {
            assert.throws(() => a.mountPath(bad), (e: VolumeError) => e.code === "invalid_argument");
          }
        });

        await t.step("destroy: the Pool holds nothing of the Volume", async () => {
          await a.destroy("db");
          await b.destroy("db");
          await b.destroy("db");
          assert.equal(await a.inspect("db"), undefined);
          assert.deepEqual(await b.list(), []);
        });
      } finally {
        for (const side of sides) await detachLoopPool(exec, { ...side, removeFile: true });
        for (const side of sides) assert.deepEqual(await loopDevicesOf(exec, side.file).catch(() => []), []);
        await Deno.remove(dir, { recursive: true });
      }
    },
  }),
);

Deno.test(
  needs(["root"], {
    name: "openBtrfsPool refuses a path that is not btrfs, naming it",
    async fn() {
      const dir = await Deno.makeTempDir();
      try {
        await assert.rejects(
          openBtrfsPool(dir, hostExec()),
          (e: VolumeError) => e.code === "invalid_argument" && e.message.includes(dir),
        );
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  }),
);
