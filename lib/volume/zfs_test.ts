// Contract tests of the ZFS Pool: the command lines it builds, checked against a fake `zfs` that answers as ZFS
// does (no ZFS kernel module on this host). Each line is the documented zfs(8) form.
import assert from "node:assert/strict";
import type { Exec } from "./exec.ts";
import { VolumeError } from "./errors.ts";
import { zfsPool } from "./zfs.ts";

interface Fake {
  exec: Exec;
  lines: string[];
  fed: string[];
}

// `answers` maps a command line prefix to its stdout, or to an Error to throw.
function fakeZfs(answers: [string, string | Error][]): Fake {
  const lines: string[] = [];
  const fed: string[] = [];
  const answer = (line: string): string => {
    const found = answers.find(([prefix]) => line.startsWith(prefix));
    if (found === undefined) return "";
    if (found[1] instanceof Error) throw found[1];
    return found[1];
  };
  return {
    lines,
    fed,
    exec: {
      async run(argv, options) {
        const line = argv.join(" ");
        lines.push(line);
        if (options?.stdin !== undefined) fed.push(await new Response(options.stdin).text());
        return answer(line);
      },
      stream(argv) {
        const line = argv.join(" ");
        lines.push(line);
        return { output: new Response("stream").body!, done: Promise.resolve() };
      },
    },
  };
}

const missing = new VolumeError("unavailable", "cannot open 'tank/ployz/db': dataset does not exist");

Deno.test("ZFS create: a dataset with refquota and its mountpoint, refused when it exists", async () => {
  const fake = fakeZfs([["zfs get -H -p -o value readonly", missing]]);
  const pool = zfsPool("tank/ployz", "/var/lib/ployz/volumes", fake.exec);
  await pool.create("db", 10 * 2 ** 30);
  assert.deepEqual(fake.lines, [
    "zfs get -H -p -o value readonly tank/ployz/db",
    "zfs create -o refquota=10737418240 -o mountpoint=/var/lib/ployz/volumes/db tank/ployz/db",
  ]);
  assert.equal(pool.mountPath("db"), "/var/lib/ployz/volumes/db");
  const there = fakeZfs([["zfs get -H -p -o value readonly", "off\n"]]);
  await assert.rejects(
    zfsPool("tank/ployz", "/v", there.exec).create("db", 2 ** 30),
    (e: VolumeError) => e.code === "conflict",
  );
});

Deno.test("ZFS inspect: readonly off is a Writer's copy, Snapshots in creation order", async () => {
  const fake = fakeZfs([
    ["zfs get -H -p -o value readonly", "on\n"],
    ["zfs list -H -t snapshot", "tank/ployz/db@g1-1\ntank/ployz/db@g2-1\n"],
  ]);
  const got = await zfsPool("tank/ployz", "/v", fake.exec).inspect("db");
  assert.deepEqual(got, { name: "db", writable: false, snapshots: ["g1-1", "g2-1"] });
  assert.equal(fake.lines[1], "zfs list -H -t snapshot -o name -s createtxg -d 1 tank/ployz/db");
  const none = fakeZfs([["zfs get", missing]]);
  assert.equal(await zfsPool("tank/ployz", "/v", none.exec).inspect("db"), undefined);
});

Deno.test("ZFS snapshot and send: full and incremental (-i from the base)", async () => {
  const fake = fakeZfs([]);
  const pool = zfsPool("tank/ployz", "/v", fake.exec);
  await pool.snapshot("db", "g3-1");
  pool.send("db", "g3-1");
  pool.send("db", "g3-2", "g3-1");
  assert.deepEqual(fake.lines, [
    "zfs snapshot tank/ployz/db@g3-1",
    "zfs send tank/ployz/db@g3-1",
    "zfs send -i tank/ployz/db@g3-1 tank/ployz/db@g3-2",
  ]);
});

Deno.test("ZFS receive: a new Mirror unmounted and read-only, then incrementals into it", async () => {
  // A tiny stateful zfs: the dataset appears with the first receive, each receive adds the sent Snapshot.
  let snapshots: string[] = [];
  const lines: string[] = [];
  const fed: string[] = [];
  const exec: Exec = {
    async run(argv, options) {
      const line = argv.join(" ");
      lines.push(line);
      if (line.startsWith("zfs get")) {
        if (snapshots.length === 0) throw missing;
        return "on\n";
      }
      if (line.startsWith("zfs list")) return snapshots.map((s) => `tank/ployz/db@${s}\n`).join("");
      if (argv[1] === "receive") {
        const text = await new Response(options?.stdin).text();
        fed.push(text);
        snapshots = [...snapshots, text];
      }
      return "";
    },
    stream: () => ({ output: new Response("").body!, done: Promise.resolve() }),
  };
  const pool = zfsPool("tank/ployz", "/v", exec);
  await pool.receive("db", "g1-1", new Response("g1-1").body!);
  await pool.receive("db", "g1-2", new Response("g1-2").body!);
  assert.deepEqual(lines.filter((l) => l.includes("receive")), [
    "zfs receive -u -o readonly=on -o mountpoint=/v/db tank/ployz/db",
    "zfs receive -u tank/ployz/db",
  ]);
  assert.deepEqual(fed, ["g1-1", "g1-2"]);
  // A stream that held another Snapshot than the one asked for is an error.
  await assert.rejects(
    pool.receive("db", "g1-3", new Response("g9-9").body!),
    (e: VolumeError) => e.code === "invalid_argument",
  );
});

Deno.test("ZFS receive: a Snapshot already here is refused without running zfs receive", async () => {
  const fake = fakeZfs([
    ["zfs get -H -p -o value readonly", "on\n"],
    ["zfs list -H -t snapshot", "tank/ployz/db@g1-1\n"],
  ]);
  await assert.rejects(
    zfsPool("tank/ployz", "/v", fake.exec).receive("db", "g1-1", new Response("x").body!),
    (e: VolumeError) => e.code === "conflict",
  );
  assert(!fake.lines.some((l) => l.includes("receive")));
});

Deno.test("ZFS promote, demote, destroy and resize", async () => {
  const fake = fakeZfs([
    ["zfs get -H -p -o value readonly", "off\n"],
    ["zfs get -H -p -o value referenced,refquota", "5000000\n1073741824\n"],
  ]);
  const pool = zfsPool("tank/ployz", "/v", fake.exec);
  await pool.promote("db", "g2-3", 2 ** 30);
  await pool.demote("db");
  await pool.destroySnapshot("db", "g1-1");
  await pool.resize("db", 2 * 2 ** 30);
  await assert.rejects(pool.resize("db", 4 * 2 ** 20), (e: VolumeError) => e.code === "invalid_argument");
  await pool.destroy("db");
  assert.deepEqual(fake.lines.filter((l) => !l.startsWith("zfs get") && !l.startsWith("zfs list")), [
    "zfs rollback -r tank/ployz/db@g2-3",
    "zfs set readonly=off refquota=1073741824 tank/ployz/db",
    "zfs mount tank/ployz/db",
    "zfs set readonly=on tank/ployz/db",
    "zfs unmount tank/ployz/db",
    "zfs destroy tank/ployz/db@g1-1",
    "zfs set refquota=2147483648 tank/ployz/db",
    "zfs destroy -r tank/ployz/db",
  ]);
});

Deno.test("ZFS usage and space read exact bytes (-p)", async () => {
  const fake = fakeZfs([
    ["zfs get -H -p -o value referenced,refquota,written,readonly", "123\n0\n45\noff\n"],
    ["zfs get -H -p -o value used,available", "1000\n9000\n"],
  ]);
  const pool = zfsPool("tank/ployz", "/v", fake.exec);
  assert.deepEqual(await pool.usage("db"), { usedBytes: 123, sizeBytes: undefined, changedBytes: 45 });
  assert.deepEqual(await pool.space(), { totalBytes: 10000, freeBytes: 9000 });
});

Deno.test("ZFS refuses names that would leave the Pool or read as options", () => {
  const pool = zfsPool("tank/ployz", "/v", fakeZfs([]).exec);
  for (const bad of ["../x", "-o", "a/b", "A", "", "db@x"]) {
    assert.throws(() => pool.mountPath(bad), (e: VolumeError) => e.code === "invalid_argument", bad);
  }
  assert.throws(() => pool.send("db", "-R"), (e: VolumeError) => e.code === "invalid_argument");
  assert.throws(
    () => zfsPool("-x", "/v", fakeZfs([]).exec),
    (e: VolumeError) => e.code === "invalid_argument",
  );
  assert.throws(
    () => zfsPool("tank", "rel", fakeZfs([]).exec),
    (e: VolumeError) => e.code === "invalid_argument",
  );
});
