/**
 * The metric loop of `ployzd observe`: a sampling round every 10 s on a wall-clock grid (file reads only), each
 * round stored and followed by folding closed hours and retention; slow sources on their own 60 s tick, which the
 * round never waits on.
 *
 * @module
 */

import { join } from "node:path";
import type { MetricStore } from "./metric_store.ts";
import { Sampler } from "./sampler.ts";
import { diskFreeSource, SlowTick } from "./slow_tick.ts";
import { messageOf, sleep } from "../../util/mod.ts";

/** Options of {@link runMetrics}. */
export interface MetricsLoopOptions {
  /** Docker's data root. */
  dockerRoot: string;
  /** The data dir: its file system's free space is a slow source. */
  dataDir: string;
  /** Default `/sys/fs/cgroup`. */
  cgroupRoot?: string;
  /** Default `/proc`. */
  procRoot?: string;
  /** The sampling interval. Default 10000 ms. */
  sampleMs?: number;
  /** The slow sources' interval. Default 60000 ms. */
  slowMs?: number;
  /** The slow sources' timeout. Default 5000 ms. */
  slowTimeoutMs?: number;
  /** Receives one-line notices. */
  log: (line: string) => void;
}

/** Samples, stores and maintains metrics until `signal` aborts. */
export async function runMetrics(
  store: MetricStore,
  options: MetricsLoopOptions,
  signal: AbortSignal,
): Promise<void> {
  const sampleMs = options.sampleMs ?? 10_000;
  const slow = new SlowTick({
    sources: [diskFreeSource(join(options.dataDir, "observe"))],
    intervalMs: options.slowMs,
    timeoutMs: options.slowTimeoutMs,
    log: options.log,
  });
  const slowRun = slow.run(signal);
  const sampler = new Sampler({
    dockerRoot: options.dockerRoot,
    cgroupRoot: options.cgroupRoot,
    procRoot: options.procRoot,
    slow: () => slow.values(),
  });
  const refused = sampler.refused;
  if (refused.length > 0) {
    options.log(
      `Cannot read ${
        refused.map((r) => `"${r}"`).join(" and ")
      }: this process lacks the permission (Deno asks for ` +
        `all permissions to read /proc and /sys themselves); their metrics are recorded as the gap "not_permitted". ` +
        `Bind-mount them read-only elsewhere and name the copies in PLOYZ_OBSERVE_PROC_ROOT and PLOYZ_OBSERVE_CGROUP_ROOT`,
    );
  }
  let failing = false;
  try {
    while (!signal.aborted) {
      // Rounds sit on a grid so every Machine's and container's samples line up in time.
      const next = Math.ceil((Date.now() + 1) / sampleMs) * sampleMs;
      await sleep(next - Date.now(), signal);
      if (signal.aborted) break;
      try {
        store.record(sampler.sample(next));
        store.maintain(Date.now());
        failing = false;
      } catch (error) {
        if (!failing) {
          options.log(`Metric round failed: ${messageOf(error)}`);
        }
        failing = true;
      }
    }
  } finally {
    await slowRun;
  }
}
