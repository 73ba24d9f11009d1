import type { PermissionSetName } from "./sets.ts";

/**
 * V8 flags per `ployzd` subcommand, kept only where measured to help (`tools/bench/lab_footprint_bench.ts` and a
 * standalone `ployzd dns` under dnsperf):
 * - `dns`: lite mode (no optimizing compiler) and a 1 MB young generation. Idle it changes little (the lab shows
 *   45–47 MB either way), but after a dnsperf burst it stays at ~53 MB instead of ~66 MB, at the same throughput
 *   (54k vs 56k queries/s on this host). Lite mode is not used for serve: it made Ed25519 sign+verify, which
 *   every replicated change needs, 8× slower.
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
