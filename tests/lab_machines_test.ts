// Machines in a mesh, end to end, as root on real components: `ployz lab up` starts one ployzd per namespace
// (real dockerd, wireguard-go, SQLite stores), founds the Cluster on m1 and adds m2, m3 through the real enrollment
// flow. Then: every Machine sees three Machines up; stores converge; a container row written on m3 reaches m1; a
// partition leaves both sides answering and writing while membership degrades; two operators adding Machines on
// either side pick the same /24 and the collision survives convergence; healing makes the stores identical;
// restarting a ployzd keeps the mesh and the containers serving; `machine rm` asks a Machine to leave.
import assert from "node:assert/strict";
import { join } from "node:path";
import { wgInterfaceName } from "../lib/lab/mod.ts";
import { DOCKER_SOCKET, ownedLabelArgs } from "./support/docker.ts";
import { eventually } from "./support/poll.ts";
import { run, type RunResult } from "./support/spawn.ts";
import { fetchInLab, helloServer, labAddress, labExec, labPlace, ployzCli } from "./support/lab.ts";
import { readRows, storeDigest } from "./support/lab_store.ts";
import { needs } from "./support/needs.ts";

// Short membership thresholds so a partition shows within the test. Handshakes alone stop proving "up" after 15 s;
// traffic (store sync both ways, WireGuard keepalives every 25 s) keeps a reachable peer up for 30 s after its last
// packet.
const THRESHOLDS = {
  PLOYZ_MEMBERSHIP_HANDSHAKE_UP_MS: "15000",
  PLOYZ_MEMBERSHIP_STORE_UP_MS: "30000",
  PLOYZ_MEMBERSHIP_DOWN_AFTER_MS: "45000",
  PLOYZ_MESH_TICK_MS: "2000",
};

interface Listed {
  observer: { "machine_id": string; "machine_name": string };
  machines: { id: string; name: string; subnet?: string; membership: string; phase?: string }[];
  "subnet_collisions": { subnet: string; machines: { id: string; name: string }[] }[];
}

/** Pids of the wireguard-go processes serving `iface`, found by their exact command line. */
function wireguardGo(iface: string): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const argv = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).split("\0").filter((a) => a !== "");
      if (argv[0]?.endsWith("wireguard-go") && argv.at(-1) === iface) pids.push(Number(entry.name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

Deno.test(needs(["lab"], {
  name: "ployz lab with ployzd per Machine: join, membership, sync, partition, collision, heal, restart, rm",
  async fn(t) {
    const { name, dir, at } = labPlace("k");
    const env = { PLOYZ_DOCKER_SOCKET: DOCKER_SOCKET, PLOYZ_CONFIG_DIR: join(dir, "nobody"), ...THRESHOLDS };
    const sock = (m: string): string => join(dir, m, "run", "ployz.sock");
    const db = (m: string): string => join(dir, m, "ployz", "store.db");

    const { ployz, ok } = ployzCli(env);
    // `machine ls` as the given Machine observes it, through `lab exec` (the CLI inside its namespace).
    const ls = async (m: string): Promise<Listed> =>
      JSON.parse((await ok(labExec(m, at, ["ployz", "machine", "ls", "--json"]))).stdout);
    const ids: Record<string, string> = {};
    const runOwned = async (m: string, container: string): Promise<void> => {
      await ok(
        labExec(m, at, [
          "docker",
          ...helloServer(container, container, ownedLabelArgs(ids[m], "lab", container)),
        ]),
      );
    };
    const rowNames = (m: string): string[] =>
      [...readRows(db(m), "containers").values()].map((r) => String(r.name)).sort();
    /** Waits up to `ms` for Machine `m`'s store to hold the row of `container`; answers when it did. */
    const rowOn = (m: string, container: string, ms: number, what: string): Promise<number> =>
      eventually(ms, what, () => Promise.resolve(rowNames(m).includes(container) ? Date.now() : undefined));

    try {
      const started = Date.now();
      await ok(["lab", "up", "--machines", "5", "--join", "3", "--name", name, ...at]);
      console.log(`lab up (5 Machines, 3 joined): ${((Date.now() - started) / 1000).toFixed(1)} s`);

      await t.step(
        "every Machine's machine ls shows the three Machines up, in its own observation",
        async () => {
          for (const m of ["m1", "m2", "m3"]) {
            const list = await eventually(30_000, `${m} sees 3 Machines up`, async () => {
              const l = await ls(m);
              return l.machines.length === 3 && l.machines.every((x) => x.membership === "up")
                ? l
                : undefined;
            });
            assert.equal(list.observer.machine_name, m);
            for (const x of list.machines) ids[x.name] = x.id;
            assert.deepEqual(list.machines.map((x) => x.subnet), [
              "10.210.0.0/24",
              "10.210.1.0/24",
              "10.210.2.0/24",
            ]);
          }
          const m4 = JSON.parse(
            (await ok(["machine", "ls", "--json"], { PLOYZ_RUN_DIR: join(dir, "m4", "run") })).stdout,
          );
          assert.equal(m4.machines.length, 0, "an uninitialized Machine holds no rows");
          assert.match(m4.mesh_error, /not in a Cluster/);
        },
      );

      await t.step("stores converge: the same machines rows on every Machine", async () => {
        await eventually(15_000, "identical stores on m1, m2, m3", () => {
          const digests = new Set(["m1", "m2", "m3"].map((m) => storeDigest(db(m))));
          return Promise.resolve(digests.size === 1 ? true : undefined);
        });
        for (const m of ["m1", "m2", "m3"]) {
          assert.deepEqual([...readRows(db(m), "machines").values()].map((r) => r.name).sort(), [
            "m1",
            "m2",
            "m3",
          ]);
        }
      });

      await t.step("a container row written on m3 appears on m1 within 5 s", async () => {
        await runOwned("m3", "web3");
        const written = await rowOn("m3", "web3", 15_000, "m3 publishes web3");
        await rowOn("m1", "web3", 5_000, "web3 on m1");
        console.log(`row web3: m3 → m1 in ${Date.now() - written} ms (polling every 500 ms)`);
      });

      const address = await labAddress({ ployz, ok }, dir, "m3", "web3");
      assert.match(address, /^10\.210\.2\.\d+$/);
      const fetchFromM1 = (): Promise<RunResult> => ployz(fetchInLab(dir, "m1", `http://${address}/`));
      assert.match((await fetchFromM1()).stdout, /hello-from-web3\s+rc=0/, "m1's container reaches m3's");

      await t.step("partition m1,m2 / m3: each side answers, writes, and judges the other side", async () => {
        await ok(["lab", "partition", "m1,m2,m4", "/", "m3,m5", ...at]);
        await runOwned("m1", "web1");
        await runOwned("m3", "web3b");
        await rowOn("m2", "web1", 15_000, "web1 reaches m2");
        const m3view = await eventually(90_000, "m3 no longer judges m1 and m2 up", async () => {
          const l = await ls("m3");
          const others = l.machines.filter((x) => x.name !== "m3");
          return others.every((x) => x.membership === "suspect" || x.membership === "down") ? l : undefined;
        });
        assert.equal(m3view.machines.find((x) => x.name === "m3")?.membership, "up");
        // Each side judges on its own evidence and clock: m1 may still have heard from m3 a moment later.
        const m1view = await eventually(30_000, "m1 no longer judges m3 up", async () => {
          const l = await ls("m1");
          return l.machines.find((x) => x.name === "m3")?.membership !== "up" ? l : undefined;
        });
        assert.equal(m1view.machines.find((x) => x.name === "m2")?.membership, "up");
        await eventually(90_000, "m3 judges m1 down", async () => {
          const l = await ls("m3");
          return l.machines.find((x) => x.name === "m1")?.membership === "down" ? true : undefined;
        });
        assert.equal(rowNames("m3").includes("web1"), false, "web1 cannot have crossed the partition");
        assert.equal(rowNames("m1").includes("web3b"), false, "web3b cannot have crossed the partition");
      });

      await t.step("two operators add Machines on either side: both pick the same /24", async () => {
        const [a, b] = await Promise.all([
          ployz(["machine", "add", "--socket", sock("m4"), "--name", "m4", "--json"], {
            PLOYZ_RUN_DIR: join(dir, "m1", "run"),
            PLOYZ_CONFIG_DIR: join(dir, "operator-a"),
          }),
          ployz(["machine", "add", "--socket", sock("m5"), "--name", "m5", "--json"], {
            PLOYZ_RUN_DIR: join(dir, "m3", "run"),
            PLOYZ_CONFIG_DIR: join(dir, "operator-b"),
          }),
        ]);
        assert.equal(a.code, 0, `add m4: ${a.stderr}`);
        assert.equal(b.code, 0, `add m5: ${b.stderr}`);
        const [ra, rb] = [JSON.parse(a.stdout), JSON.parse(b.stdout)];
        assert.equal(ra.participating, true);
        assert.equal(rb.participating, true);
        assert.equal(ra.subnet, "10.210.3.0/24");
        assert.equal(rb.subnet, "10.210.3.0/24", "the other operator could not see m4's pick");
        ids.m4 = ra.machine.id;
        ids.m5 = rb.machine.id;
      });

      await t.step(
        "heal: m1, m2, m3 converge to identical stores, nothing lost, the collision reported",
        async () => {
          await ok(["lab", "heal", ...at]);
          const healed = Date.now();
          await eventually(60_000, "identical stores on m1, m2, m3 after heal", () => {
            const digests = new Set(["m1", "m2", "m3"].map((m) => storeDigest(db(m))));
            return Promise.resolve(digests.size === 1 ? true : undefined);
          });
          console.log(`converged after heal in ${Date.now() - healed} ms (polling every 500 ms)`);
          for (const m of ["m1", "m2", "m3"]) {
            const names = rowNames(m);
            for (const c of ["web1", "web3", "web3b"]) assert.ok(names.includes(c), `${c} on ${m}: ${names}`);
            const machines = [...readRows(db(m), "machines").values()].map((r) => r.name).sort();
            assert.deepEqual(machines, ["m1", "m2", "m3", "m4", "m5"]);
          }
          for (const m of ["m1", "m3"]) {
            const list = await ls(m);
            const collision = list.subnet_collisions.find((c) => c.subnet === "10.210.3.0/24");
            assert.ok(collision, `${m} reports the collision: ${JSON.stringify(list.subnet_collisions)}`);
            assert.deepEqual(collision.machines.map((x) => x.name).sort(), ["m4", "m5"]);
          }
          const text = await ok(["lab", "exec", "m2", ...at, "--", "ployz", "machine", "ls"]);
          assert.match(text.stdout, /^Observed by "m2" \(\w+\) at \S+/);
          assert.match(text.stdout, /warning: subnet collision on 10\.210\.3\.0\/24: "m4" .*"m5"/);
        },
      );

      await t.step("restarting m3's ployzd keeps the mesh and the containers serving", async () => {
        const before = wireguardGo(wgInterfaceName(name, 3));
        assert.equal(before.length, 1, "one wireguard-go serves m3's interface");
        await ok(["lab", "restart", "m3", ...at]);
        assert.deepEqual(
          wireguardGo(wgInterfaceName(name, 3)),
          before,
          "the same wireguard-go survived the restart",
        );
        assert.match(
          (await fetchFromM1()).stdout,
          /hello-from-web3\s+rc=0/,
          "m1 still reaches m3's container",
        );
        await runOwned("m3", "web3c");
        await rowOn("m1", "web3c", 15_000, "web3c from the restarted m3 reaches m1");
        const list = await eventually(30_000, "m3 judges m1 and m2 up again", async () => {
          const l = await ls("m3");
          const up = l.machines.filter((x) => ["m1", "m2"].includes(x.name) && x.membership === "up");
          return up.length === 2 ? l : undefined;
        });
        assert.equal(list.observer.machine_name, "m3");
      });

      await t.step(
        "machine rm: refused without a way to reach it, refused without Data Loss consent",
        async () => {
          const entry = { PLOYZ_RUN_DIR: join(dir, "m1", "run") };
          const unreachable = await ployz(["machine", "rm", "m2"], entry);
          assert.equal(unreachable.code, 2);
          assert.match(unreachable.stderr, /only it can tombstone its own row.*nothing was changed/);
          const busy = await ployz(["machine", "rm", "m3", "--socket", sock("m3")], entry);
          assert.equal(busy.code, 1);
          assert.match(
            busy.stderr,
            /^error\[conflict\]: Machine "m3" runs 3 Ployz container\(s\).*--confirm-data-loss m3/,
          );
          const wrong = await ployz(["machine", "rm", "m2", "--socket", sock("m3")], entry);
          assert.match(wrong.stderr, /^error\[conflict\]: Refusing to remove: the Machine reached is "m3"/);
          // m2 runs no container: it leaves, and its tombstone reaches the others.
          const gone = await ok(["machine", "rm", "m2", "--socket", sock("m2"), "--json"], entry);
          const left = JSON.parse(gone.stdout);
          assert.equal(left.machine_id, ids.m2);
          assert.equal(left.interface_removed, true);
          const log = await Deno.readTextFile(join(dir, "m2", "ployzd.log"));
          assert.ok(
            left.tombstone_delivered_to.length >= 1,
            `delivered: ${gone.stdout}: ${log.slice(-3000)}`,
          );
          for (const m of ["m1", "m3"]) {
            await eventually(
              15_000,
              `m2's tombstone on ${m}`,
              () => Promise.resolve(readRows(db(m), "machines").has(ids.m2) ? undefined : true),
            );
          }
          const after = await ok(["machine", "ls", "--json"], { PLOYZ_RUN_DIR: join(dir, "m2", "run") });
          assert.equal(JSON.parse(after.stdout).machines.length, 0, "m2 holds no rows after leaving");
          const m1view = await ls("m1");
          assert.equal(m1view.machines.some((x) => x.id === ids.m2), false);
        },
      );
    } finally {
      const down = await ployz(["lab", "down", ...at]);
      assert.equal(down.code, 0, `lab down failed: ${down.stderr}`);
    }
    const namespaces = (await run("ip", ["netns", "list"])).stdout;
    assert.equal(namespaces.split("\n").some((l) => l.startsWith(`${name}-`)), false, `namespaces left`);
  },
}));
