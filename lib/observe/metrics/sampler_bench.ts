// CPU cost of one sampling round with 50 containers, against reading the same files raw, on fixture trees (the
// same round on a real dockerd's containers, with its CPU as % of one core, is tools/bench/sampler_docker_bench.ts).
import { join } from "node:path";
import { CgroupReader } from "./cgroup.ts";
import { containerId, labels, writeTree } from "./fixtures.ts";
import { Sampler } from "./sampler.ts";

const N = 50;

async function withFixtures(): Promise<Awaited<ReturnType<typeof writeTree>> & { ids: string[] }> {
  const root = await Deno.makeTempDir({ prefix: "ployz-sampler-bench-" });
  globalThis.addEventListener("unload", () => Deno.removeSync(root, { recursive: true }));
  const ids = Array.from({ length: N }, (_, i) => containerId(i + 1));
  const cgroup = { cpuNs: 1e9, usage: 1e6, inactiveFile: 0, read: 0, write: 0 };
  const tree = await writeTree(
    root,
    ids.map((id, i) => ({
      id,
      labels: labels(`svc-${i % 5}`),
      state: { pid: 1000 + i },
      cgroup,
      net: { rx: 1, tx: 1 },
    })),
    { busy: 1, idle: 1, memTotalKb: 1, memAvailableKb: 1, rx: 1, tx: 1, load1: 1 },
  );
  return { ...tree, ids };
}

const setup = await withFixtures();
const sampler = new Sampler(setup);
const v1 = new CgroupReader(setup).version === 1;

// The files one round reads, as paths, found once.
const pids = setup.ids.map((id) =>
  JSON.parse(Deno.readTextFileSync(join(setup.dockerRoot, "containers", id, "config.v2.json"))).State
    .Pid as number
);
const files = setup.ids.flatMap((id, i) => [
  join(setup.dockerRoot, "containers", id, "config.v2.json"),
  ...(v1
    ? [
      join(setup.cgroupRoot, "cpuacct", "docker", id, "cpuacct.usage"),
      join(setup.cgroupRoot, "memory", "docker", id, "memory.usage_in_bytes"),
      join(setup.cgroupRoot, "memory", "docker", id, "memory.stat"),
      join(setup.cgroupRoot, "blkio", "docker", id, "blkio.throttle.io_service_bytes"),
    ]
    : ["cpu.stat", "memory.current", "memory.stat", "io.stat"].map((f) =>
      join(setup.cgroupRoot, "docker", id, f)
    )),
  join(setup.procRoot, String(pids[i]), "net", "dev"),
]).concat(["stat", "meminfo", "net/dev", "loadavg"].map((f) => join(setup.procRoot, f)));

function readRaw(): number {
  let n = 0;
  for (const f of files) {
    try {
      n += Deno.readFileSync(f).length;
    } catch {
      // A file the round would record as a gap.
    }
  }
  return n;
}

Deno.bench({
  name: `read the round's ${files.length} files raw`,
  group: "round",
  baseline: true,
  fn(): void {
    readRaw();
  },
});

Deno.bench({
  name: `sampler round, ${N} containers (fixture trees)`,
  group: "round",
  fn(): void {
    sampler.sample();
  },
});
