// Volumes of 1 GiB between two lab Machines, measured in one run against their baseline:
// - a full send over the mesh, `ployz volume mirror VOL --to m2` (m2 pulls ployz.volume.send.v1 from m1 over
//   WireGuard and receives it into its Pool), against `btrfs send | btrfs receive` piped by hand between the same
//   two Pools on the host (baseline); the ratio prints in the group's summary, and each run prints MiB/s;
// - a Move with a fresh Mirror, `ployz volume move VOL --to M` (sync, cut, final incremental, Writer{start}): its
//   total time, and the write-unavailable window it reports (cut → the target's Container started).
// A Service writes a counter into the Volume all along. Needs root, Linux, the dev dockerd, btrfs-progs and every
// command `ployz lab` runs; run it alone (`/work/wt/heavy`-style), never in CI.
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { labUp, missingCommands } from "../../lib/lab/mod.ts";

const HOST_DOCKER = Deno.env.get("PLOYZ_DOCKER_SOCKET") ?? "/var/run/docker.sock";
const IMAGE = "ployz-test/busybox:1";
const PLOYZ = fileURLToPath(new URL("../../bin/ployz", import.meta.url));
const MiB = 2 ** 20;
const DATA_MIB = 1024;

function ready(): boolean {
  try {
    return Deno.build.os === "linux" && Deno.uid() === 0 && missingCommands().length === 0 &&
      Deno.statSync(HOST_DOCKER).isSocket === true &&
      new Deno.Command("btrfs", { args: ["--version"], stdout: "null" }).outputSync().success;
  } catch {
    return false;
  }
}

const READY = ready();
const tag = crypto.randomUUID().slice(0, 4);
const dir = `/tmp/plz-bench-vol-${tag}`;

async function run(cmd: string, args: string[], env?: Record<string, string>): Promise<string> {
  const out = await new Deno.Command(cmd, { args, env, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")}: ${text}`);
  return text;
}

function ployz(args: string[]): Promise<string> {
  return run(PLOYZ, args, {
    PLOYZ_DOCKER_SOCKET: HOST_DOCKER,
    PLOYZ_CONFIG_DIR: join(dir, "operator"),
    PLOYZ_RUN_DIR: join(dir, "m1", "run"),
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    NO_COLOR: "1",
  });
}

/** Each Machine's Pool mount point on the host. */
const where: Record<string, string> = {};

/** The Machine holding the Writer now, and the other one. */
let writer = "m1";
const other = (): string => writer === "m1" ? "m2" : "m1";

if (READY) {
  await labUp({ machines: 2, dir, name: `bvol${tag}`, images: [IMAGE], poolBytes: 4096 * MiB });
  globalThis.addEventListener("unload", () => {
    // Synchronous on purpose: unload does not wait for promises.
    new Deno.Command(PLOYZ, { args: ["lab", "down", "--dir", dir], stdout: "null", stderr: "null" })
      .outputSync();
  });
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
    command: ["sh", "-c", "i=$$(cat /data/counter 2>/dev/null || echo 0); while true; do i=$$((i+1)); echo $$i > /data/counter; sleep 0.2; done"]
    volumes: [data:/data]
    x-machines: [m1]
    stop_grace_period: 1s
x-volumes:
  data: {size: 2G}
`,
  );
  await ployz(["deploy", "-f", compose, "-y", "--monitor", "0s"]);
  await run("dd", [
    "if=/dev/urandom",
    `of=${join(where.m1, "volumes", "bv_data", "big")}`,
    "bs=4M",
    `count=${DATA_MIB / 4}`,
    "status=none",
  ]);
  await run("sync", []);
  // The hand-piped baseline sends a read-only Snapshot of its own, kept beside the Pool's Volumes.
  await run("btrfs", [
    "subvolume",
    "snapshot",
    "-r",
    join(where.m1, "volumes", "bv_data"),
    join(where.m1, "bench-snap"),
  ]);
}

function mibPerSecond(ms: number): string {
  return (DATA_MIB / (ms / 1000)).toFixed(0);
}

Deno.bench({
  name: "btrfs send | btrfs receive, piped by hand between the two Pools",
  group: "full send of a 1 GiB Volume",
  baseline: true,
  n: 3,
  warmup: 0,
  ignore: !READY,
  async fn(b) {
    const into = join(where.m2, "bench-recv");
    await Deno.mkdir(into, { recursive: true });
    b.start();
    const started = performance.now();
    await run("sh", [
      "-c",
      `btrfs send -q "$1" | btrfs receive "$2"`,
      "sh",
      join(where.m1, "bench-snap"),
      into,
    ]);
    const ms = performance.now() - started;
    b.end();
    console.log(`by hand: ${DATA_MIB} MiB in ${ms.toFixed(0)} ms = ${mibPerSecond(ms)} MiB/s`);
    await run("btrfs", ["subvolume", "delete", join(into, "bench-snap")]);
  },
});

Deno.bench({
  name: "ployz volume mirror --to m2 (over the mesh, whole run)",
  group: "full send of a 1 GiB Volume",
  n: 3,
  warmup: 0,
  ignore: !READY,
  async fn(b) {
    b.start();
    const started = performance.now();
    const out = await ployz(["volume", "mirror", "bv_data", "--to", "m2"]);
    const ms = performance.now() - started;
    b.end();
    const step = /m2: none → Mirror@\S+ \(from m1\) in (\d+) ms/.exec(out);
    if (step === null) throw new Error(out);
    console.log(
      `ployz: whole run ${ms.toFixed(0)} ms = ${mibPerSecond(ms)} MiB/s; the receive step ${step[1]} ms = ${
        mibPerSecond(Number(step[1]))
      } MiB/s`,
    );
    await ployz(["volume", "rm-mirror", "bv_data", "--on", "m2"]);
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
    const held = JSON.parse(await ployz(["volume", "inspect", "bv_data", "--json"])) as {
      copies: { "machine_name": string; copy: { role: string } }[];
    };
    const there = held.copies.find((c) => c.machine_name === target)?.copy.role ?? "none";
    await ployz(
      there === "none" ? ["volume", "mirror", "bv_data", "--to", target] : ["volume", "sync", "bv_data"],
    );
    b.start();
    const started = performance.now();
    const out = await ployz(["volume", "move", "bv_data", "--to", target, "--json"]);
    const ms = performance.now() - started;
    b.end();
    const result = JSON.parse(out.split("\n").find((l) => l.startsWith("{"))!) as {
      state: string;
      "unavailable_ms": number;
    };
    if (result.state !== "done") throw new Error(out);
    writer = target;
    console.log(
      `move to ${target}: total ${ms.toFixed(0)} ms, write-unavailable ${result.unavailable_ms} ms`,
    );
  },
});
