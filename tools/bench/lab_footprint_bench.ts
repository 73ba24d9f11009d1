// Idle resident memory of every Ployz process on a 3-Machine lab after a Deploy: `ployzd serve`, `ployzd dns` and
// `ployzd observe` on each Machine (goals: dns <= 45 MB, observe <= 60 MB, serve <= 80 MB), plus the modules each
// subcommand loads. Prints figures; asserts nothing.
//
// It builds a real lab, so it runs only when asked: `PLOYZ_BENCH_LAB=1 deno bench -A tools/bench/lab_footprint_bench.ts`
// (root, the dev engine at PLOYZ_DOCKER_SOCKET). PLOYZ_BENCH_TREE=/path/to/checkout measures another checkout's
// programs with this file's procedure; several, comma-separated (`/tmp/before,.`), are measured one after the
// other in the same run, for before/after figures. Each tree is bundled first (`tools/build/bundle.ts`), so its
// Machines run what an installed release runs; the figures say which file each process started from.
import { join, resolve } from "node:path";
import { countByArea, loadedModules } from "../module_graph.ts";
import { ROOT, run } from "../../tests/support/spawn.ts";
import { labPlace } from "../../tests/support/lab.ts";

const TREES = (Deno.env.get("PLOYZ_BENCH_TREE") ?? ROOT).split(",").map((t) => resolve(t.trim()));
const IMAGE = "ployz-test/busybox:1";
const IDLE_MS = 15_000;
const SUBCOMMANDS = ["serve", "dns", "observe"] as const;

interface ProcessFigure {
  /** The file deno runs: `cmd/ployzd.ts` (source) or `dist/ployzd/ployzd.js` (bundle). */
  entry: string;
  pid: number;
  rssMb: number;
  peakMb: number;
  /** Resident memory with pages shared with other processes (the deno binary's code) divided among them. */
  pssMb: number;
  /** Anonymous resident memory: this process's own heap and stacks. */
  anonMb: number;
  /**
   * Where the resident memory is, from /proc/<pid>/smaps: the deno binary's pages (its code, shared with every
   * deno process), glibc's main malloc arena (`[heap]`), and the other anonymous mappings (the V8 heap, stacks,
   * glibc's other arenas, or all of jemalloc's).
   */
  regionsMb: { binary: number; malloc: number; anon: number };
  /** The malloc it runs with: `jemalloc` when preloaded (lib/permissions/runtime_flags.ts), else `glibc`. */
  malloc: string;
}

function regions(pid: string): ProcessFigure["regionsMb"] {
  const out = { binary: 0, malloc: 0, anon: 0 };
  let region: keyof typeof out | undefined;
  for (const line of Deno.readTextFileSync(`/proc/${pid}/smaps`).split("\n")) {
    const head = line.match(/^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/);
    if (head) {
      const name = head[1];
      region = name === ""
        ? "anon"
        : name === "[heap]"
        ? "malloc"
        : /\/deno$/.test(name)
        ? "binary"
        : undefined;
      continue;
    }
    const rss = line.match(/^Rss:\s+(\d+) kB/);
    if (rss && region !== undefined) out[region] += Number(rss[1]) / 1024;
  }
  return out;
}

function statusField(status: string, name: string): number {
  return Number(status.match(new RegExp(`^${name}:\\s+(\\d+) kB`, "m"))?.[1] ?? NaN) / 1024;
}

// The lab's ployzd processes of one Machine, found by the run directory in their environment.
function machineProcesses(runDir: string): Map<string, ProcessFigure> {
  const found = new Map<string, ProcessFigure>();
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const argv = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).split("\0");
      const at = argv.findIndex((a) => /\/ployzd\.(ts|js)$/.test(a));
      if (at < 0) continue;
      const env = Deno.readTextFileSync(`/proc/${entry.name}/environ`).split("\0");
      if (!env.includes(`PLOYZ_RUN_DIR=${runDir}`)) continue;
      const status = Deno.readTextFileSync(`/proc/${entry.name}/status`);
      const rollup = Deno.readTextFileSync(`/proc/${entry.name}/smaps_rollup`);
      found.set(argv[at + 1], {
        entry: argv[at],
        pid: Number(entry.name),
        rssMb: statusField(status, "VmRSS"),
        peakMb: statusField(status, "VmHWM"),
        pssMb: Number(rollup.match(/^Pss:\s+(\d+) kB/m)?.[1] ?? NaN) / 1024,
        anonMb: statusField(status, "RssAnon"),
        regionsMb: regions(entry.name),
        malloc: env.some((e) => /^LD_PRELOAD=.*jemalloc/.test(e)) ? "jemalloc" : "glibc",
      });
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

async function labFootprint(tree: string): Promise<void> {
  const { name, dir, env } = labPlace("fp");
  const ployz = (args: string[], extra: Record<string, string> = {}) =>
    run(join(tree, "bin", "ployz"), args, { ...env, ...extra });
  const must = async (args: string[], extra: Record<string, string> = {}) => {
    const r = await ployz(args, extra);
    if (r.code !== 0) throw new Error(`ployz ${args.join(" ")} failed: ${r.stderr}${r.stdout}`);
  };
  try {
    // What an installed Machine runs: the tree's bundles, built fresh (a tree without a daemon bundle runs source).
    const bundled = await run(Deno.execPath(), ["run", "-A", join(tree, "tools", "build", "bundle.ts")], {
      HOME: Deno.env.get("HOME") ?? "/root",
      ...(Deno.env.get("DENO_DIR") ? { DENO_DIR: Deno.env.get("DENO_DIR")! } : {}),
    });
    if (bundled.code !== 0) throw new Error(`bundling ${tree} failed: ${bundled.stderr}`);
    await must(["lab", "up", "--machines", "3", "--name", name, "--dir", dir]);
    const compose = join(dir, "compose.yaml");
    await Deno.writeTextFile(
      compose,
      `name: fp\nservices:\n  web:\n    image: ${IMAGE}\n    command: ["sleep", "600"]\n` +
        `    deploy: {replicas: 3}\n    stop_signal: SIGKILL\n`,
    );
    await must(["deploy", "-f", compose, "-y"], { PLOYZ_RUN_DIR: join(dir, "m1", "run") });
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    const figures: Record<string, ProcessFigure[]> = { serve: [], dns: [], observe: [] };
    for (const m of ["m1", "m2", "m3"]) {
      const processes = machineProcesses(join(dir, m, "run"));
      for (const sub of SUBCOMMANDS) {
        const p = processes.get(sub);
        if (p) figures[sub].push(p);
        else console.log(`${m}: no ployzd ${sub} process found`);
      }
    }
    console.log(`idle RSS on a 3-Machine lab, ${IDLE_MS / 1000} s after a 3-replica Deploy (${tree}):`);
    const entries = [
      ...new Set(
        SUBCOMMANDS.flatMap((sub) =>
          figures[sub].map((p) => `${sub} from ${p.entry} with ${p.malloc} malloc`)
        ),
      ),
    ];
    console.log(`  ${entries.join("; ")}`);
    const goals: Record<string, number> = { serve: 80, dns: 45, observe: 60 };
    for (const sub of SUBCOMMANDS) {
      const list = figures[sub].map((p) => `${p.rssMb.toFixed(1)}`).join(" / ");
      const median = figures[sub].map((p) =>
        p.rssMb
      ).sort((a, b) => a - b)[Math.floor(figures[sub].length / 2)];
      const peaks = figures[sub].map((p) => `${p.peakMb.toFixed(1)}`).join(" / ");
      const pss = figures[sub].map((p) => `${p.pssMb.toFixed(1)}`).join(" / ");
      const anon = figures[sub].map((p) => `${p.anonMb.toFixed(1)}`).join(" / ");
      const where = figures[sub].map((p) =>
        `${p.regionsMb.binary.toFixed(1)}+${p.regionsMb.malloc.toFixed(1)}+${p.regionsMb.anon.toFixed(1)}`
      ).join(" / ");
      console.log(
        `  ployzd ${sub.padEnd(7)} RSS ${list} MB (median ${median?.toFixed(1)}; peak ${peaks}; ` +
          `goal <= ${goals[sub]} MB); ` +
          `PSS ${pss} MB; anonymous ${anon} MB; deno binary + malloc heap + other anonymous ${where} MB`,
      );
    }
  } finally {
    const down = await ployz(["lab", "down", "--dir", dir]);
    if (down.code !== 0) console.error(`lab down failed: ${down.stderr}`);
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

async function graphs(): Promise<void> {
  for (const sub of SUBCOMMANDS) {
    const loaded = await loadedModules("cmd/ployzd.ts", [`cmd/ployzd/${sub}.ts`]);
    console.log(
      `ployzd ${sub}: ${loaded.files.length} modules ${JSON.stringify(countByArea(loaded.files))}, ` +
        `npm: ${loaded.npm.join(" ") || "-"}`,
    );
  }
}

if (TREES.includes(resolve(ROOT))) await graphs();
if (Deno.env.get("PLOYZ_BENCH_LAB") === "1") {
  for (const tree of TREES) await labFootprint(tree);
} else console.log("lab_footprint: set PLOYZ_BENCH_LAB=1 to build a 3-Machine lab and measure idle RSS");

// `deno bench` needs at least one case; this one times what the figures above explain.
Deno.bench({
  name: "module graph of ployz (the command list only)",
  group: "module graph",
  baseline: true,
  n: 3,
  warmup: 0,
  async fn() {
    await loadedModules("cmd/ployz.ts");
  },
});

Deno.bench({
  name: "module graph of ployzd dns (deno info)",
  group: "module graph",
  n: 3,
  warmup: 0,
  async fn() {
    await loadedModules("cmd/ployzd.ts", ["cmd/ployzd/dns.ts"]);
  },
});
