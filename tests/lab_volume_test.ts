// Provisioned Volumes in a lab, end to end, as root on real components: `ployz lab up --pool btrfs:512M` gives each
// Machine a btrfs Pool on a loop file; a Service with `x-volumes` gets its Volume made in the Pool on its Machine,
// bind-mounted and limited to its size, recorded in the replicated `volumes` rows; `ployz machine pool` shows the
// Pools and copies; a Machine holding only a Mirror refuses to create a Container on it, naming the check; Volume
// Runs (mirror, sync, move) over the mesh; a Deploy after a Move keeps the Service where the Writer is whatever
// x-machines names; faults (a target without space for a full or an incremental send, the operator killed before and after the cut, the source
// partitioned after the cut) leave one Writer and no lost write; rm --volumes destroys every copy; and the lab
// leaves no mount or loop device behind.
import assert from "node:assert/strict";
import { join } from "node:path";
import { IMAGE } from "./support/docker.ts";
import { machinesUp, startLab } from "./support/lab.ts";
import { readRows } from "./support/lab_store.ts";
import { eventually } from "./support/poll.ts";
import { killedAt as killedAtPoint, ROOT, run } from "./support/spawn.ts";
import { needs } from "./support/needs.ts";
import type { ContainerSpec } from "../lib/deploy/mod.ts";
import { connectMachine, type RpcError } from "../lib/rpc/mod.ts";
import { openConfigStore } from "../lib/store/mod.ts";

const MiB = 2 ** 20;

function compose(machine: string): string {
  return `name: vol
services:
  db:
    image: ${IMAGE}
    command: ["sh", "-c", "i=$$(cat /data/counter 2>/dev/null || echo 0); while true; do i=$$((i+1)); echo $$i > /data/counter; sleep 0.2; done"]
    volumes: [data:/data]
    x-machines: [${machine}]
    stop_grace_period: 1s
x-volumes:
  data: {size: 64M}
`;
}

interface PoolJson {
  machines: {
    "machine_name": string;
    "machine_id": string;
    pool: { kind: string; where: string; "total_bytes"?: number } | null;
    volumes: {
      name: string;
      role: string;
      snapshot?: string;
      "size_bytes"?: number;
      "used_bytes"?: number;
    }[];
  }[];
}

Deno.test(needs(["lab", "command:btrfs", "command:mkfs.btrfs", "command:losetup"], {
  name: "Provisioned Volumes: lab Pools, a Volume made on its Machine, rows, the limit, a Mirror refused",
  async fn(t) {
    const lab = await startLab("vol", 2, { upArgs: ["--pool", "btrfs:512M"] });
    const poolFiles = ["m1", "m2"].map((m) => join(lab.dir, m, "ployz", "pool.img"));
    try {
      await machinesUp(lab, "m1", 2);
      const pools = async (): Promise<PoolJson> => {
        const shown = await lab.on("m1", ["machine", "pool", "--json"]);
        assert.equal(shown.code, 0, shown.stderr);
        return JSON.parse(shown.stdout) as PoolJson;
      };
      const where: Record<string, string> = {};
      const ids: Record<string, string> = {};

      await t.step("machine pool: every Machine has a btrfs Pool of the lab's size", async () => {
        const shown = await pools();
        assert.deepEqual(shown.machines.map((m) => [m.machine_name, m.pool?.kind]).sort(), [
          ["m1", "btrfs"],
          ["m2", "btrfs"],
        ]);
        for (const m of shown.machines) {
          assert.equal(m.pool?.total_bytes, 512 * MiB);
          where[m.machine_name] = m.pool!.where;
          ids[m.machine_name] = m.machine_id;
        }
        const human = await lab.on("m1", ["machine", "pool"]);
        assert.match(human.stdout, /m1\s+btrfs/);
      });

      const volumePath = (): string => join(where.m1, "volumes", "vol_data");
      // The name of the vol Container running on Machine `m`, or "" for none.
      const running = async (m: string): Promise<string> => {
        const listed = await lab.docker(m, [
          "ps",
          "--filter",
          "label=ployz.project=vol",
          "--filter",
          "status=running",
          "--format",
          "{{.Names}}",
        ]);
        return listed.stdout.trim();
      };
      await t.step("deploy: the Volume is made in m1's Pool and bound into the Container", async () => {
        const file = join(lab.dir, "vol.yaml");
        await Deno.writeTextFile(file, compose("m1"));
        const deployed = await lab.on("m1", ["deploy", "-f", file, "-y"]);
        assert.equal(deployed.code, 0, deployed.stderr + deployed.stdout);
        const name = await running("m1");
        assert.notEqual(name, "");
        const mounts = await lab.docker("m1", ["inspect", "--format", "{{json .Mounts}}", name]);
        const parsed = JSON.parse(mounts.stdout) as { Type: string; Source: string; Destination: string }[];
        assert.deepEqual(parsed.map((m) => [m.Type, m.Source, m.Destination]), [[
          "bind",
          volumePath(),
          "/data",
        ]]);
        // The Service writes into the subvolume itself.
        const counter = await eventually(10_000, "the counter grows in the subvolume", async () => {
          const n = Number(await Deno.readTextFile(join(volumePath(), "counter")).catch(() => "0"));
          return n > 3 ? n : undefined;
        });
        assert(counter > 3);
        const subvolume = await run("btrfs", ["subvolume", "show", volumePath()]);
        assert.equal(subvolume.code, 0, subvolume.stderr);
        assert.match(subvolume.stdout, /Limit referenced:\s+64\.00MiB/);
        // No Docker volume was made for it.
        const volumes = await lab.docker("m1", ["volume", "ls", "--format", "{{.Name}}"]);
        assert(!volumes.stdout.includes("vol_data"), volumes.stdout);
      });

      await t.step("the Volume's size is a hard limit inside the Container", async () => {
        const name = await running("m1");
        const wrote = await lab.docker("m1", [
          "exec",
          name,
          "sh",
          "-c",
          "dd if=/dev/zero of=/data/big bs=1M count=80 2>&1; echo rc=$?",
        ]);
        assert.match(wrote.stdout, /quota/i, JSON.stringify(wrote));
        assert.doesNotMatch(wrote.stdout, /rc=0/);
        await lab.docker("m1", ["exec", name, "rm", "-f", "/data/big"]);
      });

      await t.step("the copy is in m1's volumes rows, replicated to m2, and in machine pool", async () => {
        for (const m of ["m1", "m2"]) {
          await eventually(30_000, `m1's volumes row on ${m}`, () => {
            const rows = readRows(join(lab.dir, m, "ployz", "store.db"), "volumes");
            const row = rows.get(`vol_data@${ids.m1}`);
            return row?.state === "writer" && row.size_bytes === 64 * MiB && row.project === "vol" &&
                row.machine_id === ids.m1
              ? row
              : undefined;
          });
        }
        const shown = await pools();
        const m1 = shown.machines.find((m) => m.machine_name === "m1")!;
        assert.deepEqual(m1.volumes.map((v) => [v.name, v.role, v.size_bytes]), [[
          "vol_data",
          "writer",
          64 * MiB,
        ]]);
        assert((m1.volumes[0].used_bytes ?? 0) > 0);
      });

      await t.step("a Machine holding only a Mirror refuses to run the Volume's Container", async () => {
        // A Mirror on m2 made by hand with btrfs itself: a read-only Snapshot sent from m1's Pool into m2's.
        const snapDir = join(where.m1, "snapshots", "vol_data");
        await Deno.mkdir(snapDir, { recursive: true });
        const snap = await run("btrfs", ["subvolume", "snapshot", "-r", volumePath(), join(snapDir, "g0-1")]);
        assert.equal(snap.code, 0, snap.stderr);
        const into = join(where.m2, "snapshots", "vol_data");
        await Deno.mkdir(into, { recursive: true });
        const piped = await run("sh", [
          "-c",
          `btrfs send -q "$1" | btrfs receive "$2"`,
          "sh",
          join(snapDir, "g0-1"),
          into,
        ]);
        assert.equal(piped.code, 0, piped.stderr);
        const shown = await pools();
        const m2 = shown.machines.find((m) => m.machine_name === "m2")!;
        assert.deepEqual(m2.volumes.map((v) => [v.name, v.role, v.snapshot]), [[
          "vol_data",
          "mirror",
          "g0-1",
        ]]);

        // x-machines naming m2 does not pull the Service off its Writer: the Deploy keeps it on m1 and says why.
        const file = join(lab.dir, "vol-m2.yaml");
        await Deno.writeTextFile(file, compose("m2"));
        const deployed = await lab.on("m1", ["deploy", "-f", file, "-y"]);
        assert.equal(deployed.code, 0, deployed.stderr + deployed.stdout);
        assert.match(
          deployed.stdout,
          /Nothing to do: 1 container up to date\n(.*\n)*Placed by Volume:\n {2}- Service "vol\/db" runs on "m1", which holds the Writer of "vol_data" \(x-machines names "m2"/,
        );
        // And m2 itself refuses to create the Container while it holds only a Mirror (Machine-local admission).
        using m1Client = connectMachine({ socketPath: join(lab.dir, "m1", "run", "ployz.sock") });
        using m2Client = connectMachine({ socketPath: join(lab.dir, "m2", "run", "ployz.sock") });
        const held = await m1Client.volumeContainers({ volume: "vol_data" });
        const spec = held.containers[0].spec as unknown as ContainerSpec;
        const refused = await m2Client.ensureContainer({
          spec: { ...spec, placement: { machines: ["m2"] } },
          start: false,
        }).then(() => undefined, (e) => e as RpcError);
        assert.equal(refused?.code, "conflict", String(refused));
        assert.match(refused!.message, /"vol_data" is not ready on Machine "m2": it is a Mirror at g0-1/);
        const onM2 = await lab.docker("m2", ["ps", "-aq", "--filter", "label=ployz.project=vol"]);
        assert.equal(onM2.stdout.trim(), "", "nothing was created on m2");
        // m1's Container still runs and writes.
        const before = Number(await Deno.readTextFile(join(volumePath(), "counter")));
        await eventually(10_000, "the counter still grows on m1", async () => {
          const n = Number(await Deno.readTextFile(join(volumePath(), "counter")));
          return n > before ? n : undefined;
        });
      });

      const inspect = async (): Promise<Record<string, string>> => {
        const shown = await lab.on("m1", ["volume", "inspect", "vol_data", "--json"]);
        assert.equal(shown.code, 0, shown.stderr);
        const parsed = JSON.parse(shown.stdout) as {
          copies: { "machine_name": string; copy: { role: string; snapshot?: string } }[];
        };
        return Object.fromEntries(
          parsed.copies.map((
            c,
          ) => [c.machine_name, c.copy.role === "mirror" ? `mirror@${c.copy.snapshot}` : c.copy.role]),
        );
      };
      const sameBytes = async (snapshot: string, file: string): Promise<string> => {
        const [a, b] = await Promise.all(
          ["m1", "m2"].map((m) => Deno.readFile(join(where[m], "snapshots", "vol_data", snapshot, file))),
        );
        assert.deepEqual(a, b, `${file} in ${snapshot} is the same on m1 and m2`);
        return new TextDecoder().decode(a.subarray(0, 32));
      };

      await t.step("volume rm-mirror, mirror and sync: Volume Runs over the mesh", async () => {
        const random = new Uint8Array(16 * MiB);
        for (let at = 0; at < random.length; at += 65536) {
          crypto.getRandomValues(random.subarray(at, at + 65536));
        }
        await Deno.writeFile(join(volumePath(), "blob"), random);

        const removed = await lab.on("m1", ["volume", "rm-mirror", "vol_data", "--on", "m2"]);
        assert.equal(removed.code, 0, removed.stderr);
        assert.deepEqual(await inspect(), { m1: "writer", m2: "none" });

        const mirrored = await lab.on("m1", ["volume", "mirror", "vol_data", "--to", "m2", "--json"]);
        assert.equal(mirrored.code, 0, mirrored.stderr);
        assert.match(mirrored.stderr, /m2: none → Mirror@g2-/);
        const first = (await inspect()).m2.replace("mirror@", "");
        assert.match(first, /^g2-/);
        await sameBytes(first, "blob");
        const counterAtMirror = Number(await sameBytes(first, "counter"));

        const synced = await lab.on("m1", ["volume", "sync", "vol_data"]);
        assert.equal(synced.code, 0, synced.stderr);
        const second = (await inspect()).m2.replace("mirror@", "");
        assert.match(second, /^g3-/);
        assert(Number(await sameBytes(second, "counter")) > counterAtMirror, "the sync carried newer writes");
        await sameBytes(second, "blob");
        const listed = await lab.on("m1", ["volume", "ls"]);
        assert.match(listed.stdout, /vol_data\s+m1\s+Writer/);
        assert.match(listed.stdout, /vol_data\s+m2\s+Mirror@g3-/);
      });

      await t.step(
        "refusals: a late gen, a stale expected copy, a second open run, release without the name",
        async () => {
          using m2 = connectMachine({ socketPath: join(lab.dir, "m2", "run", "ployz.sock") });
          const now = (await inspect()).m2.replace("mirror@", "");
          const late = await m2.setVolumeCopy({
            volume: "vol_data",
            expected: { role: "mirror", snapshot: now },
            wanted: { role: "none" },
            gen: 2,
          }).then(() => undefined, (e) => e as RpcError);
          assert.equal(late?.code, "conflict");
          assert.match(late!.message, /gen 2 is below this Volume's floor 3/);
          const stale = await m2.setVolumeCopy({
            volume: "vol_data",
            expected: { role: "none" },
            wanted: { role: "writer" },
            gen: 9,
          }).then(() => undefined, (e) => e as RpcError);
          assert.equal(stale?.code, "conflict");
          assert.deepEqual(stale!.details.copy, { role: "mirror", snapshot: now });
          assert.equal((await inspect()).m2, `mirror@${now}`, "nothing changed");

          const config = openConfigStore(join(lab.dir, "operator", "config.db"));
          try {
            config.openVolumeRun("vol_data", "move", JSON.stringify({ to: "m2" }), new Date().toISOString());
          } finally {
            config.close();
          }
          const second = await lab.on("m1", ["volume", "sync", "vol_data"]);
          assert.notEqual(second.code, 0);
          assert.match(second.stderr, /error\[conflict\]: Volume "vol_data" has an open move run \(gen 4/);
          const cancelled = await lab.on("m1", ["volume", "cancel", "vol_data"]);
          assert.equal(cancelled.code, 0, cancelled.stderr);
          assert.match(cancelled.stderr, /move run of "vol_data" \(gen 4\) cancelled/);

          const bare = await lab.on("m1", ["volume", "release", "vol_data"]);
          assert.notEqual(bare.code, 0, bare.stderr);
          assert.match(
            bare.stderr,
            /error\[invalid_argument\]: Releasing "vol_data" destroys its Writer's data: confirm with --confirm vol_data/,
          );
          const wrong = await lab.on("m1", ["volume", "release", "vol_data", "--confirm", "vol"]);
          assert.notEqual(wrong.code, 0);
          assert.deepEqual(Object.keys(await inspect()).sort(), ["m1", "m2"]);
          assert.equal((await inspect()).m1, "writer");
          const unknown = await lab.on("m1", ["volume", "inspect", "nosuch"]);
          assert.match(unknown.stderr, /error\[not_found\]: No Machine that answered holds Volume "nosuch"/);
        },
      );

      const livePath = (m: string): string => join(where[m], "volumes", "vol_data");

      await t.step(
        "volume move to m2 under the write loop: same bytes, the counter goes on, m1 keeps a Mirror",
        async () => {
          const blob = await Deno.readFile(join(livePath("m1"), "blob"));
          const moved = await lab.on("m1", ["volume", "move", "vol_data", "--to", "m2", "--json"]);
          assert.equal(moved.code, 0, moved.stderr);
          const result = JSON.parse(moved.stdout) as { state: string; gen: number; "unavailable_ms": number };
          assert.equal(result.state, "done");
          console.log(`move of a 16 MiB Volume, write-unavailable window: ${result.unavailable_ms} ms`);
          const cut = `g${result.gen}-cut`;
          assert.deepEqual(await inspect(), { m1: `mirror@${cut}`, m2: "writer" });
          assert.equal(await running("m1"), "", "the source Container is gone");
          assert.notEqual(await running("m2"), "", "the Service runs on m2");
          assert.deepEqual(await Deno.readFile(join(livePath("m2"), "blob")), blob);
          // The counter at the cut is the same on both sides, and the Service on m2 continues from it.
          const atCut = Number(await sameBytes(cut, "counter"));
          await eventually(10_000, "the counter grows on m2 past its value at the cut", async () => {
            const n = Number(await Deno.readTextFile(join(livePath("m2"), "counter")).catch(() => "0"));
            return n > atCut + 2 ? n : undefined;
          });
        },
      );

      await t.step(
        "deploy after the Move: the unchanged file (x-machines: m1) keeps the Service on m2, with its data",
        async () => {
          const file = join(lab.dir, "vol.yaml");
          const before = await running("m2");
          const blob = await Deno.readFile(join(livePath("m2"), "blob"));
          const preview = await lab.on("m1", ["deploy", "-f", file, "--dry-run"]);
          assert.equal(preview.code, 0, preview.stderr + preview.stdout);
          assert.match(
            preview.stdout,
            /Placed by Volume:\n {2}- Service "vol\/db" runs on "m2", which holds the Writer of "vol_data" \(x-machines names "m1"/,
          );
          assert.match(preview.stdout, /Nothing to do: 1 container up to date/);
          const again = await lab.on("m1", ["deploy", "-f", file, "-y"]);
          assert.equal(again.code, 0, again.stderr + again.stdout);
          assert.equal(await running("m2"), before, "the same Container still runs on m2");
          assert.equal(await running("m1"), "", "nothing went back to m1");

          // A changed file replaces the Container where the data is: the new one continues the counter.
          const beforeReplace = Number(await Deno.readTextFile(join(livePath("m2"), "counter")));
          await Deno.writeTextFile(
            file,
            compose("m1").replace(
              "stop_grace_period: 1s",
              "stop_grace_period: 1s\n    environment: {RUN: two}",
            ),
          );
          const changed = await lab.on("m1", ["deploy", "-f", file, "-y"]);
          assert.equal(changed.code, 0, changed.stderr + changed.stdout);
          assert.match(changed.stdout, /replace vol-db-/);
          const after = await running("m2");
          assert.notEqual(after, "");
          assert.notEqual(after, before, "a new Container runs on m2");
          assert.equal(await running("m1"), "");
          const env = await lab.docker("m2", ["inspect", "--format", "{{json .Config.Env}}", after]);
          assert.match(env.stdout, /RUN=two/);
          await eventually(10_000, "the new Container continues the counter on m2", async () => {
            const n = Number(await Deno.readTextFile(join(livePath("m2"), "counter")).catch(() => "0"));
            return n > beforeReplace + 2 ? n : undefined;
          });
          assert.deepEqual(await Deno.readFile(join(livePath("m2"), "blob")), blob, "the data is intact");
          assert.equal((await inspect()).m2, "writer");
        },
      );

      // The CLI run through `entry`, killed (SIGKILL) as soon as its progress matches `at`; what it printed.
      const killedAt = async (entry: string, args: string[], at: RegExp): Promise<string> => {
        const { seen, code } = await killedAtPoint(join(ROOT, "bin", "ployz"), args, lab.envOn(entry), at);
        // A run that ended before the point is a failure to show.
        assert.match(seen, at, `exit ${code} before ${at}:\n${seen}`);
        return seen;
      };

      await t.step("a Move back whose operator is killed after the cut: the re-run finishes it", async () => {
        const seen = await killedAt(
          "m1",
          ["volume", "move", "vol_data", "--to", "m1"],
          /m2: Writer\(epoch \d+\) → Mirror@g\d+-cut/,
        );
        const gen = Number(/run of "vol_data" \(gen (\d+)\)/.exec(seen)![1]);
        // Nobody is the Writer now; m2 keeps its stopped Container.
        const mid = await inspect();
        assert.equal(mid.m2, `mirror@g${gen}-cut`);
        assert.notEqual(mid.m1, "writer");

        const again = await lab.on("m1", ["volume", "move", "vol_data", "--to", "m1", "--json"]);
        assert.equal(again.code, 0, again.stderr);
        const result = JSON.parse(again.stdout) as { state: string; gen: number; resumed: boolean };
        assert.deepEqual([result.state, result.gen, result.resumed], ["done", gen, true]);
        assert.deepEqual(await inspect(), { m1: "writer", m2: `mirror@g${gen}-cut` });
        assert.notEqual(await running("m1"), "");
        assert.equal(await running("m2"), "");

        // A late request of the first Move's gen is refused by the floor on either Machine.
        using m2 = connectMachine({ socketPath: join(lab.dir, "m2", "run", "ployz.sock") });
        const late = await m2.setVolumeCopy({
          volume: "vol_data",
          expected: { role: "mirror", snapshot: `g${gen}-cut` },
          wanted: { role: "writer" },
          gen: gen - 1,
        }).then(() => undefined, (e) => e as RpcError);
        assert.match(late?.message ?? "", new RegExp(`gen ${gen - 1} is below this Volume's floor ${gen}`));
        assert.equal((await inspect()).m2, `mirror@g${gen}-cut`);
      });

      const counterGrows = async (m: string): Promise<void> => {
        const at = Number(await Deno.readTextFile(join(livePath(m), "counter")));
        await eventually(10_000, `the counter grows on ${m}`, async () => {
          const n = Number(await Deno.readTextFile(join(livePath(m), "counter")).catch(() => "0"));
          return n > at ? n : undefined;
        });
      };

      await t.step("a Move into a Pool without space fails before the cut; m1 keeps serving", async () => {
        const removed = await lab.on("m1", ["volume", "rm-mirror", "vol_data", "--on", "m2"]);
        assert.equal(removed.code, 0, removed.stderr);
        // btrfs frees a deleted subvolume's space in the background: wait for it before measuring.
        assert.equal((await run("btrfs", ["subvolume", "sync", where.m2])).code, 0);
        await run("btrfs", ["filesystem", "sync", where.m2]);
        const freeOnM2 = async (): Promise<number> => {
          const pool = (await pools()).machines.find((m) => m.machine_name === "m2")!.pool as {
            "free_bytes"?: number;
          };
          assert(typeof pool.free_bytes === "number", JSON.stringify(pool));
          return pool.free_bytes;
        };
        // Fill m2's Pool with a file beside its Volumes, leaving less than the Volume uses on m1 (16 MiB and more).
        const filler = join(where.m2, "filler");
        const filled = await run("fallocate", ["-l", String(await freeOnM2() - 4 * MiB), filler]);
        assert.equal(filled.code, 0, filled.stderr);
        await run("btrfs", ["filesystem", "sync", where.m2]);
        assert((await freeOnM2()) < 8 * MiB, "m2's Pool is nearly full");
        try {
          const moved = await lab.on("m1", ["volume", "move", "vol_data", "--to", "m2"]);
          assert.notEqual(moved.code, 0, moved.stderr);
          assert.match(
            moved.stderr,
            /error\[unavailable\]: Volume run failed: Machine "m2" has \d+ bytes free in its Pool and "vol_data" uses \d+ bytes on "m1": too little to receive it \(nothing changed; "m1" still holds the Writer\)/,
          );
          assert.deepEqual(await inspect(), { m1: "writer", m2: "none" });
          assert.notEqual(await running("m1"), "", "m1's Container still runs");
          await counterGrows("m1");
        } finally {
          await Deno.remove(filler);
          // The filler's space comes back at a commit: wait for it, so the next steps find room on m2.
          await eventually(30_000, "m2's Pool has room again", async () => {
            await run("btrfs", ["filesystem", "sync", where.m2]);
            return (await freeOnM2()) > 128 * MiB ? true : undefined;
          });
        }
      });

      await t.step(
        "a Move whose operator is killed before the cut: volume cancel leaves m1 the Writer",
        async () => {
          const seen = await killedAt("m1", ["volume", "move", "vol_data", "--to", "m2"], /fenced 2 Machine/);
          const gen = Number(/run of "vol_data" \(gen (\d+)\)/.exec(seen)![1]);
          const cancelled = await lab.on("m1", ["volume", "cancel", "vol_data"]);
          assert.equal(cancelled.code, 0, cancelled.stderr);
          assert.match(cancelled.stderr, new RegExp(`move run of "vol_data" \\(gen ${gen}\\) cancelled`));
          const copies = await inspect();
          assert.equal(copies.m1, "writer");
          assert.notEqual(copies.m2, "writer");
          assert.notEqual(await running("m1"), "");
          assert.equal(await running("m2"), "");
          await counterGrows("m1");
          // The next run starts from what the disks show: a receive the killed run asked may still be going on
          // m2, and is waited on, never run twice.
          const mirrored = await lab.on("m1", ["volume", "mirror", "vol_data", "--to", "m2"]);
          assert.equal(mirrored.code, 0, mirrored.stderr);
          const after = await inspect();
          assert.equal(after.m1, "writer");
          assert.match(after.m2, /^mirror@g\d+-/);
        },
      );

      await t.step(
        "a sync whose Mirror's Pool lacks room for what the Writer wrote since is refused before it sends",
        async () => {
          const before = await inspect();
          const freeOn = async (m: string): Promise<number> => {
            await run("btrfs", ["filesystem", "sync", where[m]]);
            const pool = (await pools()).machines.find((p) => p.machine_name === m)!.pool as {
              "free_bytes"?: number;
            };
            assert(typeof pool.free_bytes === "number", JSON.stringify(pool));
            return pool.free_bytes;
          };
          // 16 MiB of new data on m1, and m2's Pool filled to 4 MiB free beside its Mirror.
          const fresh = new Uint8Array(16 * MiB);
          for (let at = 0; at < fresh.length; at += 65536) {
            crypto.getRandomValues(fresh.subarray(at, at + 65536));
          }
          const delta = join(livePath("m1"), "delta");
          await Deno.writeFile(delta, fresh);
          const filler = join(where.m2, "filler");
          const filled = await run("fallocate", ["-l", String(await freeOn("m2") - 4 * MiB), filler]);
          assert.equal(filled.code, 0, filled.stderr);
          try {
            assert((await freeOn("m2")) < 8 * MiB, "m2's Pool is nearly full");
            const synced = await lab.on("m1", ["volume", "sync", "vol_data"]);
            assert.notEqual(synced.code, 0, synced.stderr);
            assert.match(
              synced.stderr,
              /error\[unavailable\]: Volume run failed: Machine "m2" has \d+ bytes free in its Pool and "vol_data" has \d+ bytes written on "m1" since its newest Snapshot: too little to receive the incremental send \(nothing changed; "m1" still holds the Writer\)/,
            );
            const written = Number(/has (\d+) bytes written on "m1"/.exec(synced.stderr)![1]);
            assert(
              written >= 16 * MiB && written < 17 * MiB,
              `the estimate is the 16 MiB written: ${written}`,
            );
            assert.deepEqual(await inspect(), before, "no copy changed");
          } finally {
            await Deno.remove(filler);
            await Deno.remove(delta);
            await eventually(30_000, "m2's Pool has room again", async () => {
              return (await freeOn("m2")) > 128 * MiB ? true : undefined;
            });
          }
        },
      );

      await t.step(
        "a Move whose source is partitioned after the cut: it stops saying so, and finishes after the heal",
        async () => {
          const blob = await Deno.readFile(join(livePath("m1"), "blob"));
          // The operator works through m2 here, so it still reaches the target once m1 is cut off.
          const seen = await killedAt(
            "m2",
            ["volume", "move", "vol_data", "--to", "m2"],
            /m1: Writer\(epoch \d+\) → Mirror@g\d+-cut/,
          );
          const gen = Number(/run of "vol_data" \(gen (\d+)\)/.exec(seen)![1]);
          const cut = `g${gen}-cut`;
          const parted = await lab.lab(["partition", "m1", "/", "m2"]);
          assert.equal(parted.code, 0, parted.stderr);
          try {
            const stuck = await lab.on("m2", ["volume", "move", "vol_data", "--to", "m2"]);
            assert.notEqual(stuck.code, 0, stuck.stderr);
            assert.match(
              stuck.stderr,
              /error\[unavailable\]: Volume run failed: Volume "vol_data" has no Writer among the Machines that answered, and none of them holds a Move's cut Snapshot; "m1" did not answer .*If a Move was cut there, its data is safe in that Machine's cut Snapshot and "m2" stays a Mirror: run "ployz volume move vol_data --to m2" again once it answers/s,
            );
          } finally {
            const healed = await lab.lab(["heal"]);
            assert.equal(healed.code, 0, healed.stderr);
          }
          await eventually(60_000, "m2 reaches m1 again", async () => {
            const shown = await lab.on("m2", ["volume", "inspect", "vol_data", "--json"]);
            return shown.code === 0 && shown.stdout.includes('"machine_name":"m1"') ? true : undefined;
          });
          const again = await lab.on("m2", ["volume", "move", "vol_data", "--to", "m2", "--json"]);
          assert.equal(again.code, 0, again.stderr);
          assert.deepEqual(await inspect(), { m1: `mirror@${cut}`, m2: "writer" });
          assert.notEqual(await running("m2"), "");
          assert.equal(await running("m1"), "");
          // No write was lost: m2 starts from the cut's bytes and goes on.
          const atCut = Number(await sameBytes(cut, "counter"));
          assert.deepEqual(await Deno.readFile(join(livePath("m2"), "blob")), blob);
          await eventually(10_000, "the counter grows on m2 past its value at the cut", async () => {
            const n = Number(await Deno.readTextFile(join(livePath("m2"), "counter")).catch(() => "0"));
            return n > atCut + 2 ? n : undefined;
          });
        },
      );

      await t.step("rm --volumes destroys the Provisioned Volume's every copy, once named", async () => {
        const refused = await lab.on("m1", ["rm", "vol", "--volumes", "-y"]);
        assert.notEqual(refused.code, 0, refused.stderr + refused.stdout);
        assert.match(
          refused.stderr,
          /error\[invalid_argument\]: Refusing to remove volumes without confirmation: it destroys "vol_data"/,
        );
        assert.equal((await inspect()).m2, "writer", "nothing was removed");
        const removed = await lab.on("m1", [
          "rm",
          "vol",
          "--volumes",
          "--confirm-data-loss",
          "vol_data",
          "-y",
        ]);
        assert.equal(removed.code, 0, removed.stderr + removed.stdout);
        assert.match(
          removed.stdout,
          /Volumes removed by each Machine once its containers are gone: vol_data/,
        );
        await eventually(30_000, "no Machine holds a copy of vol_data", async () => {
          const shown = await pools();
          return shown.machines.every((m) => m.volumes.length === 0) ? true : undefined;
        });
        for (const m of ["m1", "m2"]) {
          assert.equal(await running(m), "");
          await assert.rejects(Deno.stat(livePath(m)), Deno.errors.NotFound);
          await assert.rejects(Deno.stat(join(where[m], "snapshots", "vol_data")), Deno.errors.NotFound);
        }
        for (const m of ["m1", "m2"]) {
          await eventually(30_000, `no vol_data rows on ${m}`, () => {
            const rows = readRows(join(lab.dir, m, "ployz", "store.db"), "volumes");
            return [...rows.keys()].some((k) => k.startsWith("vol_data@")) ? undefined : true;
          });
        }
      });

      await t.step(
        "a Volume without a size takes its Machine's default; without one, the Machine says so",
        async () => {
          const file = join(lab.dir, "dflt.yaml");
          await Deno.writeTextFile(
            file,
            `name: dflt\nservices:\n  cache:\n    image: ${IMAGE}\n    command: ["sleep", "3600"]\n` +
              `    volumes: [cache:/cache]\n    x-machines: [m2]\n    stop_grace_period: 1s\nx-volumes:\n  cache: {}\n`,
          );
          const refused = await lab.on("m1", ["deploy", "-f", file, "-y"]);
          assert.notEqual(refused.code, 0, refused.stdout);
          assert.match(
            refused.stdout + refused.stderr,
            /Provisioned Volume "dflt_cache" names no size and Machine "m2" has no default Volume size: give x-volumes\.cache\.size, or set one with "ployz machine pool --machine m2 --default-size SIZE"/,
          );
          const set = await lab.on("m1", ["machine", "pool", "--machine", "m2", "--default-size", "24m"]);
          assert.equal(set.code, 0, set.stderr);
          assert.match(set.stdout, /m2\s+btrfs\s+\S+\s+\S+\s+\S+\s+24\.0MiB/);
          const shown = await pools();
          assert.deepEqual(
            shown.machines.map((
              m,
            ) => [m.machine_name, (m.pool as { "default_size_bytes"?: number }).default_size_bytes])
              .sort(),
            [["m1", undefined], ["m2", 24 * MiB]],
          );
          const deployed = await lab.on("m1", ["deploy", "-f", file, "-y"]);
          assert.equal(deployed.code, 0, deployed.stderr + deployed.stdout);
          const made = await run("btrfs", ["subvolume", "show", join(where.m2, "volumes", "dflt_cache")]);
          assert.equal(made.code, 0, made.stderr);
          assert.match(made.stdout, /Limit referenced:\s+24\.00MiB/);
        },
      );
    } finally {
      await lab[Symbol.asyncDispose]();
    }
    await t.step("lab down leaves no loop device behind", async () => {
      for (const file of poolFiles) {
        const left = await run("losetup", ["-j", file]);
        assert.equal(left.stdout.trim(), "", `loop devices of ${file}: ${left.stdout}`);
      }
    });
  },
}));
