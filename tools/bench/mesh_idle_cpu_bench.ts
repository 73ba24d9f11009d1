// CPU an idle `ployzd serve` spends on a 3-Machine lab, the commands it runs counted in (the mesh tick's iptables
// and wg, reaped by the daemon, land in its children's time): each daemon's user+system time, its own and its
// reaped children's, over PLOYZ_BENCH_IDLE_S (default 30) seconds once the lab settled, as ms of CPU per minute.
// PLOYZ_BENCH_TREE=/tmp/before,. measures several checkouts' programs with this procedure, each PLOYZ_BENCH_ROUNDS
// times (default 2), in turn (A B A B), for before/after figures in the same conditions.
// Run: sudo deno run --allow-all tools/bench/mesh_idle_cpu_bench.ts
import { join, resolve } from "node:path";
import { ROOT, run } from "../../tests/support/spawn.ts";
import { labPlace } from "../../tests/support/lab.ts";
import { LAB_READY, percentile } from "./lab_support.ts";

const TREES = (Deno.env.get("PLOYZ_BENCH_TREE") ?? ROOT).split(",").map((t) => resolve(t.trim()));
const ROUNDS = Number(Deno.env.get("PLOYZ_BENCH_ROUNDS") ?? "2");
const IDLE_MS = Number(Deno.env.get("PLOYZ_BENCH_IDLE_S") ?? "30") * 1000;
const SETTLE_MS = 10_000;
const TICKS_PER_SECOND = 100;

/** The pid of the lab Machine's `ployzd serve`, found by its run directory in its environment. */
function servePid(runDir: string): number | undefined {
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const argv = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).split("\0");
      const at = argv.findIndex((a) => /\/ployzd\.(ts|js)$/.test(a));
      if (at < 0 || argv[at + 1] !== "serve") continue;
      const env = Deno.readTextFileSync(`/proc/${entry.name}/environ`).split("\0");
      if (env.includes(`PLOYZ_RUN_DIR=${runDir}`)) return Number(entry.name);
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return undefined;
}

/** The CPU `pid` spent itself (utime + stime) and in the children it reaped (cutime + cstime), in ms. */
function cpuMs(pid: number): { own: number; children: number } {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  // Fields after the command (which may hold spaces) start at the closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const [utime, stime, cutime, cstime] = [11, 12, 13, 14].map((i) => Number(fields[i]));
  return {
    own: ((utime + stime) * 1000) / TICKS_PER_SECOND,
    children: ((cutime + cstime) * 1000) / TICKS_PER_SECOND,
  };
}

/** Per daemon: CPU per minute in all, and of it in reaped commands. */
async function idleCpu(tree: string): Promise<{ total: number; children: number }[]> {
  const { name, dir, env } = labPlace("ic");
  const ployz = (args: string[]) => run(join(tree, "bin", "ployz"), args, env);
  try {
    const up = await ployz(["lab", "up", "--machines", "3", "--name", name, "--dir", dir]);
    if (up.code !== 0) throw new Error(`lab up failed: ${up.stderr}${up.stdout}`);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const pids = ["m1", "m2", "m3"].map((m) => {
      const pid = servePid(join(dir, m, "run"));
      if (pid === undefined) throw new Error(`${m}: no ployzd serve process found`);
      return pid;
    });
    const before = pids.map(cpuMs);
    await new Promise((r) => setTimeout(r, IDLE_MS));
    const perMinute = (ms: number): number => (ms * 60_000) / IDLE_MS;
    return pids.map((pid, i) => {
      const after = cpuMs(pid);
      const children = after.children - before[i].children;
      return { total: perMinute(after.own - before[i].own + children), children: perMinute(children) };
    });
  } finally {
    const down = await ployz(["lab", "down", "--dir", dir]);
    if (down.code !== 0) console.error(`lab down failed: ${down.stderr}`);
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (!LAB_READY) {
  console.log("mesh_idle_cpu_bench: needs root and the lab's commands; skipping");
} else {
  const results = new Map<string, { total: number; children: number }[]>(TREES.map((t) => [t, []]));
  for (let round = 1; round <= ROUNDS; round++) {
    for (const tree of TREES) {
      const perDaemon = await idleCpu(tree);
      results.get(tree)!.push(...perDaemon);
      console.log(
        `round ${round}, ${tree}: ${
          perDaemon.map((v) => `${v.total.toFixed(0)} (commands ${v.children.toFixed(0)})`).join(" / ")
        } ms CPU per minute`,
      );
    }
  }
  for (const [tree, values] of results) {
    const total = values.map((v) => v.total);
    const children = values.map((v) => v.children);
    console.log(
      `idle ployzd serve, CPU per minute, ${values.length} daemons, ${tree}: p50=${
        percentile(total, 0.5).toFixed(0)
      } ms max=${Math.max(...total).toFixed(0)} ms; of it in the commands it ran: p50=${
        percentile(children, 0.5).toFixed(0)
      } ms`,
    );
  }
}
