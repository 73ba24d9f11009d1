import type { PermissionSetName } from "./sets.ts";

/**
 * V8 flags per `ployzd` subcommand, kept only where measured to help (`tools/bench/dns_footprint_bench.ts`,
 * `tools/bench/lab_footprint_bench.ts`):
 * - `dns`: lite mode (no optimizing compiler) and a 1 MB young generation. Idle it changes nothing (~46 MB either
 *   way), but RSS never shrinks after traffic, and after 200k dnsperf queries it holds 53 MB instead of 64–70 MB;
 *   throughput 48–51k vs 36–68k queries/s over three runs on this shared host (within its noise). Lite mode is not
 *   used for serve: it made Ed25519 sign+verify, which every replicated change needs, 8× slower. Tried for dns
 *   and not kept (alternating runs, idle then after 100k dnsperf queries): `MALLOC_ARENA_MAX=1`, or `=2` with
 *   glibc's trim and mmap thresholds at 128 KiB, within ±0.5 MB of 42.7–43.0 MB idle and 47.1–47.7 MB after
 *   (three runs each); `--max-old-space-size=24` the same idle but 48.5–49.3 MB after; `--single-threaded` and
 *   `--jitless` no lower idle (two to three runs each).
 *   What remains is mostly the deno binary's pages (~30 MB file-backed, shared with serve and observe: PSS
 *   ~14.5 MB) and the Node compatibility layer any `node:` import starts (~1.5 MB).
 * - `serve`: a 1 MB young generation: its loaded code alone drops from ~82 to ~77 MB, with no difference in
 *   throughput above this host's noise.
 * `observe` runs with V8's defaults: a heap cap changed it by 0–2 MB.
 * Tried for `serve` and not kept, on a 3-Machine lab idle after a Deploy (three daemons each, one run, against
 * 93.9–97.1 MB with the flag above alone): `--max-opt=2` (no Turbofan) 95.4–97.3, `--optimize-for-size`
 * 93.3–100.4, `--single-threaded-gc` 102.0–117.2, deno's `--no-code-cache` 99.0–109.2 MB. The deno binary's
 * pages (~44 MB) and the malloc heap, not V8, hold most of serve's idle RSS. With jemalloc and the minified daemon
 * bundle, `--heap-growing-percent=20` (full GCs sooner as the old generation grows) was no lower: median 85.4
 * (80.8-89.2) against 85.6 MB (78.5-89.5), two runs of three serves each (`tools/bench/lab_footprint_bench.ts`).
 */
const V8_FLAGS: Partial<Record<PermissionSetName, readonly string[]>> = {
  dns: ["--lite-mode", "--max-semi-space-size=1"],
  serve: ["--max-semi-space-size=1"],
};

/**
 * How a subcommand's `deno run` finds its configuration, where it does not name its permissions with `-P` (the
 * units and the daemon's supervised children pass them as flags):
 * - `dns` runs with none: its module graph has no bare specifier and no npm package (tests/module_graph_test.ts),
 *   and reading deno.json (import map, lockfile, npm resolution) costs it ~2 MB of idle RSS: 42.3–43.4 MB
 *   instead of 43.6–45.6 MB, three runs each, alternating (`tools/bench/dns_footprint_bench.ts`). The unstable
 *   features deno.json turns on are named instead.
 * - every other subcommand reads `config` (the release's deno.json) under its frozen lockfile, or, when
 *   `config` is not given, the deno.json deno finds beside the entry.
 */
export function configFlags(name: PermissionSetName, config?: string): string[] {
  if (name === "dns") {
    return ["--no-config", "--no-lock", "--unstable-net", "--unstable-lazy-dynamic-imports"];
  }
  return config === undefined ? [] : ["--frozen", "--config", config];
}

/** The `deno run` flags besides permissions that a subcommand runs with (every launch path uses these). */
export function runtimeFlags(name: PermissionSetName): string[] {
  const v8 = V8_FLAGS[name];
  return v8 === undefined ? [] : [`--v8-flags=${v8.join(",")}`];
}

/**
 * Environment per `ployzd` subcommand, kept only where measured to help (`tools/bench/daemon_footprint_bench.ts`,
 * `tools/bench/lab_footprint_bench.ts`):
 * - `serve`: `MALLOC_ARENA_MAX=2`. glibc gives each of the runtime's threads its own malloc arena, and freed memory
 *   stays in them; two arenas hold serve's idle RSS after a Deploy at 108–109 MB instead of 116–118 MB (anonymous
 *   61–62 MB instead of 68–69 MB, four runs each, alternating, same host). Loading alone is unchanged (~79 MB).
 * - `serve`: `MALLOC_MMAP_THRESHOLD_` and `MALLOC_TRIM_THRESHOLD_` at 128 KiB, glibc's starting values, which
 *   also turns off its rule of raising the mmap threshold to the largest block freed so far: a Deploy's large
 *   transient buffers (Docker responses, request bodies) are then mapped and unmapped instead of staying in the
 *   arenas. On a 3-Machine lab after a Deploy, six daemons each way, alternating in one run: idle RSS 95.7–102.6 MB
 *   (mean 98.3) instead of 96.4–111.9 MB (mean 104.6), anonymous mean 51.8 instead of 58.3 MB. The V8 heap is
 *   20–22 MB of that either way; the rest is native memory and the deno binary's pages.
 */
const ENVIRONMENT: Partial<Record<PermissionSetName, Readonly<Record<string, string>>>> = {
  serve: { MALLOC_ARENA_MAX: "2", MALLOC_MMAP_THRESHOLD_: "131072", MALLOC_TRIM_THRESHOLD_: "131072" },
};

/**
 * Where Debian's `libjemalloc2` puts jemalloc, per architecture (a Machine prerequisite: lib/installer).
 */
export const JEMALLOC_LIBRARIES: readonly string[] = [
  "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
  "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
];

/**
 * Subcommands that run with jemalloc as their malloc (`LD_PRELOAD`) where the host has it. `serve`: glibc keeps
 * what a Deploy freed inside its arenas (a trim returns only the top of the heap); jemalloc returns unused pages
 * after its 10 s decay. One 3-Machine lab, each serve restarted with one allocator then a 3-replica Deploy, 15 s
 * idle, alternating, two rounds (six serves each): glibc as above 81.9-88.2 MB (median 85.4), jemalloc 73.3-79.9
 * MB (median 75.7); the deno binary's pages and the V8 heap the same, Deploy 17.4 vs 18.3 s, idle CPU 8.5 vs
 * 11 ms/s. Tuned (`MALLOC_CONF=narenas:2,dirty_decay_ms:1000,muzzy_decay_ms:0,background_thread:true`) was no
 * lower (median 74.4) and its Deploys took 27 and 48 s. The glibc variables above stay: serve runs with them on a
 * host without the library (an upgrade never installs packages). Tried in the same run and not kept: a full GC
 * every 5 s at idle (`--expose-gc`; 81.1 MB median, it frees ~0.5 MB of V8 heap and some malloc), `--jitless`
 * (78.3 MB median with glibc: the optimizing compilers' code is ~4 MB of the binary's pages).
 */
const JEMALLOC: ReadonlySet<PermissionSetName> = new Set(["serve"]);

/**
 * Unsets `LD_PRELOAD` in this process, whose allocator is loaded by now, so what it starts does not inherit it:
 * deno refuses to spawn a process with `LD_PRELOAD` in its environment (without `--allow-run` for all), and each
 * child runs with its own runtime environment, as under its own unit. `ployzd serve` calls it before anything else.
 */
export function dropPreload(): void {
  if (Deno.env.get("LD_PRELOAD") !== undefined) Deno.env.delete("LD_PRELOAD");
}

/** The first of `candidates` that is a file on this host (one that cannot be read counts as absent). */
export function jemallocLibrary(candidates: readonly string[] = JEMALLOC_LIBRARIES): string | undefined {
  for (const path of candidates) {
    try {
      if (Deno.statSync(path).isFile) return path;
    } catch {
      // Absent, or not ours to read.
    }
  }
  return undefined;
}

/**
 * The environment variables besides the layout a subcommand runs with (every launch path sets these). `jemalloc`
 * is the library to preload where the subcommand runs with jemalloc (`null`: none): by default the one this host
 * has, if any.
 */
export function runtimeEnvironment(
  name: PermissionSetName,
  jemalloc: string | null = JEMALLOC.has(name) ? jemallocLibrary() ?? null : null,
): Record<string, string> {
  const env: Record<string, string> = { ...ENVIRONMENT[name] };
  if (JEMALLOC.has(name) && jemalloc !== null) env.LD_PRELOAD = jemalloc;
  return env;
}
