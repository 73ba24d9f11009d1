// A 1 GiB Volume between two lab Machines, measured in one run against its baseline:
// - full send over the mesh: `ployz volume mirror VOL --to m2` (m2 pulls ployz.volume.send.v1 from m1 over
//   WireGuard and receives it into its Pool), against `btrfs send | btrfs receive` piped by hand between the same two
//   Machines' namespaces and Pools (the baseline);
// - incremental send of 256 MiB of new data: `ployz volume sync VOL`, against `btrfs send -p | btrfs receive` by hand;
// - a Move with a fresh Mirror, `ployz volume move VOL --to M` (sync, cut, final incremental, Writer{start}): its total
//   time and the write-unavailable window it reports (cut asked → the target's Writer{start} answered, its Container
//   started).
// Each group's summary prints the ratio of whole runs; the end prints the send throughput of the receive step alone
// (MiB/s, median) against the baseline's, which is the figure to compare: a run also reads and fences every copy.
// A Service writes a counter into the Volume all along. Needs root, Linux, the dev dockerd, btrfs-progs and every
// command `ployz lab` runs; run it alone, through the heavy-test gate, never in CI.
import { join } from "node:path";
import { labUp } from "../../lib/lab/mod.ts";
import { IMAGE } from "../../tests/support/docker.ts";
import { ployzCli } from "../../tests/support/lab.ts";
import { DOCKER_SOCKET, lacking } from "../../tests/support/needs.ts";
import { run as spawn } from "../../tests/support/spawn.ts";
import { LAB_READY, labDownSync, mustRun, percentile, Series } from "./lab_support.ts";

const MiB = 2 ** 20;
const FULL_MIB = 1024;
const DELTA_MIB = 256;

// btrfs-progs; socat carries the by-hand send over the mesh.
const READY = LAB_READY && lacking("command:btrfs") === undefined && lacking("command:socat") === undefined;
const tag = crypto.randomUUID().slice(0, 4);
const dir = `/tmp/plz-bench-vol-${tag}`;
const VOLUME = "bv_data";

function run(cmd: string, args: string[]): Promise<string> {
  return mustRun(spawn(cmd, args));
}

const cli = ployzCli({
  PLOYZ_DOCKER_SOCKET: DOCKER_SOCKET,
  PLOYZ_CONFIG_DIR: join(dir, "operator"),
  PLOYZ_RUN_DIR: join(dir, "m1", "run"),
});

/** `ployz args` against m1; its output and its progress lines, which go to stderr. */
async function ployz(args: string[]): Promise<string> {
  const r = await cli.ployz(args);
  if (r.code !== 0) throw new Error(`ployz ${args.join(" ")}: ${r.stdout}${r.stderr}`);
  return r.stdout + r.stderr;
}

/** Each Machine's Pool mount point on the host, its network namespace, and its address on the mesh. */
const where: Record<string, string> = {};
const namespace: Record<string, string> = {};
const meshAddress: Record<string, string> = {};
/** Throughput of the send itself (MiB/s) per case. */
const throughput = new Series();
/** A Move's figures (ms). */
const moves = new Series();

/** The Machine holding the Writer now, and the other one. */
let writer = "m1";
const other = (): string => writer === "m1" ? "m2" : "m1";
const live = (): string => join(where[writer], "volumes", VOLUME);

/** Writes `mib` MiB of fresh random data to `file` in the Writer's Volume and commits it. */
async function fill(file: string, mib: number): Promise<void> {
  await run("dd", [
    "if=/dev/urandom",
    `of=${join(live(), file)}`,
    "bs=4M",
    `count=${mib / 4}`,
    "status=none",
  ]);
  await run("btrfs", ["filesystem", "sync", where[writer]]);
}

/** `btrfs send [-p base] snap` in m1's namespace piped into `btrfs receive into` in m2's, by the shell. */
async function byHand(snapshot: string, into: string, base?: string): Promise<number> {
  await Deno.mkdir(into, { recursive: true });
  const started = performance.now();
  await run("sh", [
    "-c",
    `ip netns exec "$1" btrfs send -q ${
      base === undefined ? "" : '-p "$5"'
    } "$2" | ip netns exec "$3" btrfs receive "$4"`,
    "sh",
    namespace.m1,
    snapshot,
    namespace.m2,
    into,
    base ?? "",
  ]);
  return performance.now() - started;
}

/**
 * The same, with the stream carried over the mesh by `socat`: m2 listens on its mesh address (its Machine Gateway,
 * where its daemon listens too) and m1 connects through WireGuard, as a daemon's pull does. Separates what the mesh
 * costs from what ployz adds.
 */
async function overMesh(snapshot: string, into: string, base?: string): Promise<number> {
  await Deno.mkdir(into, { recursive: true });
  const port = String(20000 + Math.floor(Math.random() * 20000));
  const receiver = `socat -u TCP-LISTEN:$1,bind=$2,reuseaddr STDOUT | btrfs receive "$3"`;
  const sender = `if [ -n "$3" ]; then btrfs send -q -p "$3" "$1"; else btrfs send -q "$1"; fi |
    socat -u STDIN TCP:$2,retry=50,interval=0.1`;
  const started = performance.now();
  await run("sh", [
    "-c",
    `ip netns exec "$1" sh -c '${receiver}' sh "$2" "$3" "$4" & listener=$!
ip netns exec "$5" sh -c '${sender}' sh "$6" "$3:$2" "$7" || { kill $listener; exit 1; }
wait $listener`,
    "sh",
    namespace.m2,
    port,
    meshAddress.m2,
    into,
    namespace.m1,
    snapshot,
    base ?? "",
  ]);
  return performance.now() - started;
}

async function deleteSubvolume(path: string): Promise<void> {
  try {
    await Deno.lstat(path);
  } catch {
    return;
  }
  await run("btrfs", ["subvolume", "delete", path]);
}

/** The duration of a run's receive step on `machine`, as the run printed it. */
function receiveStep(out: string, machine: string): number {
  const step = new RegExp(`${machine}: \\S+ → Mirror@\\S+ \\(from \\S+\\) in (\\d+) ms`).exec(out);
  if (step === null) throw new Error(`no receive step on ${machine} in:\n${out}`);
  return Number(step[1]);
}

/** CPU seconds used so far by the processes in the lab's namespaces, per Machine and program name (`comm`). */
async function cpuByProgram(): Promise<Map<string, number>> {
  const ticks = 100; // USER_HZ on Linux.
  const used = new Map<string, number>();
  for (const [machine, ns] of Object.entries(namespace)) {
    for (const pid of (await run("ip", ["netns", "pids", ns])).split("\n").filter((l) => /^\d+$/.test(l))) {
      try {
        const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
        const comm = `${machine} ${stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"))}`;
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        // utime and stime are fields 14 and 15 of stat, 12 and 13 after the comm.
        used.set(comm, (used.get(comm) ?? 0) + (Number(fields[11]) + Number(fields[12])) / ticks);
      } catch {
        // Gone meanwhile.
      }
    }
  }
  return used;
}

/**
 * Marks the CPU the lab's programs used so far; `report` prints what each spent since (short-lived ones, like btrfs
 * send and receive, have exited by then and are not counted).
 */
async function cpuMark(): Promise<{ report(): Promise<void> }> {
  const before = await cpuByProgram();
  return {
    async report() {
      const after = await cpuByProgram();
      const spent = [...after].map(([comm, s]) => [comm, s - (before.get(comm) ?? 0)] as const)
        .filter(([, s]) => s >= 0.05).sort((a, b) => b[1] - a[1]);
      console.log(`  CPU meanwhile: ${spent.map(([comm, s]) => `${comm} ${s.toFixed(1)} s`).join(", ")}`);
    },
  };
}

function rate(mib: number, ms: number): number {
  return mib / (ms / 1000);
}

if (READY) {
  const up = await labUp({
    machines: 2,
    dir,
    name: `bvol${tag}`,
    images: [IMAGE],
    poolBytes: 6144 * MiB,
  });
  globalThis.addEventListener("unload", () => {
    labDownSync(dir);
    if (throughput.entries().next().done) return;
    const median = (name: string): number | undefined => {
      const values = [...throughput.entries()].find(([n]) => n === name)?.[1];
      return values === undefined ? undefined : percentile(values, 0.5);
    };
    console.log("\nsend throughput of the receive step (MiB/s, each run):");
    for (const [name, values] of throughput.entries()) {
      console.log(`${name}: ${values.map((v) => v.toFixed(0)).join(", ")}`);
    }
    for (const kind of ["full", "incremental"]) {
      const ployz = median(`${kind}: ployz over the mesh`);
      const hand = median(`${kind}: btrfs send | btrfs receive by hand`);
      const mesh = median(`${kind}: btrfs send | socat over the mesh | btrfs receive`);
      if (ployz === undefined) continue;
      if (hand !== undefined) {
        console.log(`${kind} send ratio, ployz / by hand piped (medians): ${(ployz / hand).toFixed(2)}×`);
      }
      if (mesh !== undefined) {
        console.log(
          `${kind} send ratio, ployz / by hand over the mesh (medians): ${(ployz / mesh).toFixed(2)}×`,
        );
      }
    }
    console.log("\nmove of a 1 GiB Volume with a fresh Mirror (ms):");
    moves.print(0);
  });
  for (const m of up.state.plan.machines) {
    namespace[m.name] = m.namespace;
    meshAddress[m.name] = m.gateway;
  }
  const shown = JSON.parse(await ployz(["machine", "pool", "--json"])) as {
    machines: { "machine_name": string; pool: { where: string } }[];
  };
  for (const m of shown.machines) where[m.machine_name] = m.pool.where;
  const compose = join(dir, "bv.yaml");
  await Deno.writeTextFile(
    compose,
    `name: bv
services:
  db:
    image: ${IMAGE}
    command: ["sh", "-c", "trap 'exit 0' TERM; i=$$(cat /data/counter 2>/dev/null || echo 0); while true; do i=$$((i+1)); echo $$i > /data/counter; sleep 0.2; done"]
    volumes: [data:/data]
    x-machines: [m1]
    stop_grace_period: 1s
x-volumes:
  data: {size: 3G}
`,
  );
  await ployz(["deploy", "-f", compose, "-y", "--monitor", "0s"]);
  await fill("big", FULL_MIB);
  // The hand-piped baseline sends read-only Snapshots of its own, kept beside the Pool's Volumes.
  await Deno.mkdir(join(where.m1, "bench-snaps"));
  await run("btrfs", ["subvolume", "snapshot", "-r", live(), join(where.m1, "bench-snaps", "full")]);
}

Deno.bench({
  name: "btrfs send | btrfs receive, piped by hand between the two Machines",
  group: "full send of a 1 GiB Volume",
  baseline: true,
  n: 3,
  warmup: 0,
  ignore: !READY,
  async fn(b) {
    const into = join(where.m2, "bench-recv");
    b.start();
    const ms = await byHand(join(where.m1, "bench-snaps", "full"), into);
    b.end();
    throughput.record("full: btrfs send | btrfs receive by hand", rate(FULL_MIB, ms));
    console.log(`by hand: ${FULL_MIB} MiB in ${ms.toFixed(0)} ms = ${rate(FULL_MIB, ms).toFixed(0)} MiB/s`);
    await deleteSubvolume(join(into, "full"));
  },
});

Deno.bench({
  name: "btrfs send | socat over the mesh | btrfs receive, by hand",
  group: "full send of a 1 GiB Volume",
  n: 3,
  warmup: 0,
  ignore: !READY,
  async fn(b) {
    const into = join(where.m2, "bench-recv");
    const cpu = await cpuMark();
    b.start();
    const ms = await overMesh(join(where.m1, "bench-snaps", "full"), into);
    b.end();
    await cpu.report();
    throughput.record("full: btrfs send | socat over the mesh | btrfs receive", rate(FULL_MIB, ms));
    console.log(
      `over the mesh by hand: ${FULL_MIB} MiB in ${ms.toFixed(0)} ms = ${
        rate(FULL_MIB, ms).toFixed(0)
      } MiB/s`,
    );
    await deleteSubvolume(join(into, "full"));
  },
});

Deno.bench({
  name: "ployz volume mirror --to m2 (over the mesh, whole run)",
  group: "full send of a 1 GiB Volume",
  n: 3,
  warmup: 0,
  ignore: !READY,
  async fn(b) {
    await timedRun(b, ["volume", "mirror", VOLUME, "--to", "m2"], FULL_MIB, "full: ployz over the mesh");
    await ployz(["volume", "rm-mirror", VOLUME, "--on", "m2"]);
  },
});

// Each incremental iteration first rewrites the same 256 MiB file with new random data (outside the timing), so
// every send carries the same amount of changed data.
/**
 * Times `ployz args` (a run that sends `mib` MiB to m2) as the bench's measured part, with the CPU it cost; records
 * the receive step's rate under `series` and prints it beside the whole run's time.
 */
async function timedRun(b: Deno.BenchContext, args: string[], mib: number, series: string): Promise<void> {
  const cpu = await cpuMark();
  b.start();
  const started = performance.now();
  const out = await ployz(args);
  const ms = performance.now() - started;
  b.end();
  await cpu.report();
  const step = receiveStep(out, "m2");
  throughput.record(series, rate(mib, step));
  console.log(
    `ployz: whole run ${ms.toFixed(0)} ms; the receive step ${step} ms = ${rate(mib, step).toFixed(0)} MiB/s`,
  );
}

let handBase: string | undefined;
let handRound = 0;

/** One incremental send by hand, `byHand` or `overMesh`, from the base both sides hold. */
async function handIncremental(b: Deno.BenchContext, send: typeof byHand, series: string): Promise<number> {
  const snaps = join(where.m1, "bench-snaps");
  const into = join(where.m2, "bench-recv");
  if (handBase === undefined) {
    // The base both sides hold, sent in full once.
    await byHand(join(snaps, "full"), into);
    handBase = "full";
  }
  await fill("delta", DELTA_MIB);
  const next = `inc${++handRound}`;
  await run("btrfs", ["subvolume", "snapshot", "-r", live(), join(snaps, next)]);
  const cpu = await cpuMark();
  b.start();
  const ms = await send(join(snaps, next), into, join(snaps, handBase));
  b.end();
  await cpu.report();
  throughput.record(series, rate(DELTA_MIB, ms));
  // Keep only the newest on both sides, as a Volume Run does.
  await deleteSubvolume(join(snaps, handBase));
  await deleteSubvolume(join(into, handBase));
  handBase = next;
  return ms;
}

Deno.bench({
  name: "btrfs send -p | btrfs receive, piped by hand between the two Machines",
  group: "incremental send of 256 MiB",
  baseline: true,
  n: 3,
  warmup: 0,
  ignore: !READY,
  async fn(b) {
    const ms = await handIncremental(b, byHand, "incremental: btrfs send | btrfs receive by hand");
    console.log(`by hand: ${DELTA_MIB} MiB in ${ms.toFixed(0)} ms = ${rate(DELTA_MIB, ms).toFixed(0)} MiB/s`);
  },
});

Deno.bench({
  name: "btrfs send -p | socat over the mesh | btrfs receive, by hand",
  group: "incremental send of 256 MiB",
  n: 3,
  warmup: 0,
  ignore: !READY,
  async fn(b) {
    const ms = await handIncremental(
      b,
      overMesh,
      "incremental: btrfs send | socat over the mesh | btrfs receive",
    );
    console.log(
      `over the mesh by hand: ${DELTA_MIB} MiB in ${ms.toFixed(0)} ms = ${
        rate(DELTA_MIB, ms).toFixed(0)
      } MiB/s`,
    );
  },
});

Deno.bench({
  name: "ployz volume sync (over the mesh, whole run)",
  group: "incremental send of 256 MiB",
  n: 3,
  warmup: 0,
  ignore: !READY,
  async fn(b) {
    if (handBase !== undefined) {
      // The baseline's copies are done with: their space goes back to the Pools.
      await deleteSubvolume(join(where.m1, "bench-snaps", handBase));
      await deleteSubvolume(join(where.m1, "bench-snaps", "full"));
      await deleteSubvolume(join(where.m2, "bench-recv", handBase));
      handBase = undefined;
    }
    const shown = JSON.parse(await ployz(["volume", "inspect", VOLUME, "--json"])) as {
      copies: { "machine_name": string; copy: { role: string } }[];
    };
    if (shown.copies.find((c) => c.machine_name === "m2")?.copy.role !== "mirror") {
      await ployz(["volume", "mirror", VOLUME, "--to", "m2"]);
    }
    await fill("delta", DELTA_MIB);
    await timedRun(b, ["volume", "sync", VOLUME], DELTA_MIB, "incremental: ployz over the mesh");
  },
});

Deno.bench({
  name: "ployz volume move with a fresh Mirror (sync, cut, final incremental, Writer{start})",
  group: "move of a 1 GiB Volume",
  n: 4,
  warmup: 0,
  ignore: !READY,
  async fn(b) {
    // A fresh Mirror on the target first, outside the timed part.
    const target = other();
    const held = JSON.parse(await ployz(["volume", "inspect", VOLUME, "--json"])) as {
      copies: { "machine_name": string; copy: { role: string } }[];
    };
    const there = held.copies.find((c) => c.machine_name === target)?.copy.role ?? "none";
    await ployz(there === "none" ? ["volume", "mirror", VOLUME, "--to", target] : ["volume", "sync", VOLUME]);
    b.start();
    const started = performance.now();
    const out = await ployz(["volume", "move", VOLUME, "--to", target, "--json"]);
    const ms = performance.now() - started;
    b.end();
    const line = out.split("\n").find((l) => l.startsWith("{"));
    const result = JSON.parse(line ?? "{}") as { state?: string; "unavailable_ms"?: number };
    if (result.state !== "done" || result.unavailable_ms === undefined) throw new Error(out);
    writer = target;
    moves.record("total", ms);
    moves.record("write-unavailable (cut → target Writer started)", result.unavailable_ms);
    console.log(
      `move to ${target}: total ${ms.toFixed(0)} ms, write-unavailable ${result.unavailable_ms} ms`,
    );
  },
});
