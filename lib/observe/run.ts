/**
 * The `ployzd observe` process: opens the Observe Store, serves observe.sock, rescans containers every few seconds,
 * copies new output every poll, samples metrics every 10 s, and keeps the disk budget, until its signal fires.
 *
 * @module
 */

import { join } from "node:path";
import { type DiskBudget, diskSpace, enforceBudget } from "./budget.ts";
import { Ingester } from "./ingester.ts";
import { openLogStore } from "./log_store.ts";
import { MetricStore } from "./metrics/metric_store.ts";
import { runMetrics } from "./metrics/metrics_loop.ts";
import { serveObserveSocket } from "./server.ts";
import { messageOf, sleep } from "../util/mod.ts";

/** Options of {@link runObserve}. */
export interface ObserveOptions {
  /** Holds `observe/observe.db`. */
  dataDir: string;
  /** Holds `observe.sock`. */
  runDir: string;
  /** Docker's data root. */
  dockerRoot: string;
  /** The disk budget. */
  budget: DiskBudget;
  /** Stops the process cleanly. */
  signal: AbortSignal;
  /** Receives one-line notices. */
  log: (line: string) => void;
  /** How often to look for new containers. Default 3000 ms. */
  scanMs?: number;
  /** How often to read new output. Default 500 ms. */
  pollMs?: number;
  /** How often to check the disk budget. Default 30000 ms. */
  budgetMs?: number;
  /** The metric sampling interval. Default 10000 ms. */
  sampleMs?: number;
  /** Default `/sys/fs/cgroup`. */
  cgroupRoot?: string;
  /** Default `/proc`. */
  procRoot?: string;
  /** Called once observe.sock answers. */
  onReady?: () => void;
}

/** Runs the Observe Store until `options.signal` fires; see the module doc. */
export async function runObserve(options: ObserveOptions): Promise<void> {
  const dir = join(options.dataDir, "observe");
  await Deno.mkdir(dir, { recursive: true });
  const store = openLogStore({ path: join(dir, "observe.db"), log: options.log });
  const stop = new AbortController();
  const stopAll = (): void => stop.abort();
  options.signal.addEventListener("abort", stopAll, { once: true });
  try {
    const metrics = new MetricStore(store.database);
    const server = await serveObserveSocket(store, join(options.runDir, "observe.sock"), stop.signal, {
      metrics,
      sampleMs: options.sampleMs,
    });
    try {
      options.onReady?.();
      await Promise.all([
        loop(store, metrics, options, stop.signal),
        runMetrics(metrics, options, stop.signal),
      ]);
    } finally {
      stop.abort();
      await server.finished;
    }
  } finally {
    options.signal.removeEventListener("abort", stopAll);
    store.close();
  }
}

async function loop(
  store: ReturnType<typeof openLogStore>,
  metrics: MetricStore,
  options: ObserveOptions,
  signal: AbortSignal,
): Promise<void> {
  const ingester = new Ingester(store, { dockerRoot: options.dockerRoot, log: options.log });
  const scanMs = options.scanMs ?? 3000;
  const budgetMs = options.budgetMs ?? 30_000;
  let lastScan = -Infinity;
  let lastBudget = -Infinity;
  let warnedNoSpace = false;
  const storeDir = join(options.dataDir, "observe");
  while (!signal.aborted) {
    const now = performance.now();
    try {
      if (now - lastScan >= scanMs) {
        lastScan = now;
        await ingester.scan();
      }
      await ingester.poll(signal);
      if (now - lastBudget >= budgetMs) {
        lastBudget = now;
        const report = enforceBudget(
          store,
          options.budget,
          () => {
            const space = diskSpace(storeDir);
            if (space === undefined && !warnedNoSpace) {
              warnedNoSpace = true;
              options.log(
                `Cannot measure free disk space at "${storeDir}" (statfs needs the "sys" grant): only the size cap is enforced`,
              );
            }
            return space;
          },
          Date.now(),
          metrics,
        );
        if (report.hoursDeleted > 0 || report.stillOver) {
          options.log(
            `Observe Store over its ${
              report.reason === "free_floor" ? "disk free floor" : "size cap"
            }: deleted ` +
              `the oldest ${report.hoursDeleted} hour(s), ${report.linesDeleted} line(s), ` +
              `${report.metricRowsDeleted} metric row(s)` +
              (report.stillOver ? "; still over with nothing left to delete" : ""),
          );
        }
      }
    } catch (error) {
      options.log(`Observe Store step failed: ${messageOf(error)}`);
    }
    await sleep(options.pollMs ?? 500, signal);
  }
}
