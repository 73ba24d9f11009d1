import type { PermissionSetName } from "./sets.ts";

/**
 * V8 flags per `ployzd` subcommand, kept only where measured to help (`tools/bench/dns_footprint_bench.ts`,
 * `tools/bench/lab_footprint_bench.ts`):
 * - `dns`: lite mode (no optimizing compiler) and a 1 MB young generation. Idle it changes nothing (~46 MB either
 *   way), but RSS never shrinks after traffic, and after 200k dnsperf queries it holds 53 MB instead of 64–70 MB;
 *   throughput 48–51k vs 36–68k queries/s over three runs on this shared host (within its noise). Lite mode is not
 *   used for serve: it made Ed25519 sign+verify, which every replicated change needs, 8× slower.
 * - `serve`: a 1 MB young generation: its loaded code alone drops from ~82 to ~77 MB, with no difference in
 *   throughput above this host's noise.
 * `observe` runs with V8's defaults: a heap cap changed it by 0–2 MB.
 */
const V8_FLAGS: Partial<Record<PermissionSetName, readonly string[]>> = {
  dns: ["--lite-mode", "--max-semi-space-size=1"],
  serve: ["--max-semi-space-size=1"],
};

/** The `deno run` flags besides permissions that a subcommand runs with (every launch path uses these). */
export function runtimeFlags(name: PermissionSetName): string[] {
  const v8 = V8_FLAGS[name];
  return v8 === undefined ? [] : [`--v8-flags=${v8.join(",")}`];
}

/**
 * Environment per `ployzd` subcommand, kept only where measured to help (`tools/bench/daemon_footprint_bench.ts`):
 * - `serve`: `MALLOC_ARENA_MAX=2`. glibc gives each of the runtime's threads its own malloc arena, and freed memory
 *   stays in them; two arenas hold serve's idle RSS after a Deploy at 108–109 MB instead of 116–118 MB (anonymous
 *   61–62 MB instead of 68–69 MB, four runs each, alternating, same host). Loading alone is unchanged (~79 MB).
 */
const ENVIRONMENT: Partial<Record<PermissionSetName, Readonly<Record<string, string>>>> = {
  serve: { MALLOC_ARENA_MAX: "2" },
};

/** The environment variables besides the layout a subcommand runs with (every launch path sets these). */
export function runtimeEnvironment(name: PermissionSetName): Record<string, string> {
  return { ...ENVIRONMENT[name] };
}
