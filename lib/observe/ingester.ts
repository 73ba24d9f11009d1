/**
 * The ingester: finds this Machine's Ployz containers on disk, and copies their new log entries into the Log
 * Store, each batch with the cursor past it. It only reads Docker's files; it never touches a container.
 *
 * @module
 */

import { type FoundContainer, scanContainers } from "./containers.ts";
import { type LogCursor, readLogBatches, type ReadOptions } from "./log_reader.ts";
import type { LogStore } from "./log_store.ts";
import { messageOf } from "../util/mod.ts";

/** Options of {@link Ingester}. */
export interface IngesterOptions {
  /** Docker's data root; containers live in its `containers/`. */
  dockerRoot: string;
  /** Receives one-line notices (a read failure, a gap). */
  log?: (line: string) => void;
  /** Reader options (chunk size, frame cap). */
  read?: Omit<ReadOptions, "signal">;
}

/** What one poll stored. */
export interface PollReport {
  /** Lines stored. */
  lines: number;
  /** Bytes skipped as corrupt. */
  corruptBytes: number;
}

interface Tracked {
  found: FoundContainer;
  key: number;
  cursor: LogCursor | undefined;
}

/** Discovers containers with {@link Ingester.scan} and copies their output with {@link Ingester.poll}. */
export class Ingester {
  readonly #store: LogStore;
  readonly #options: IngesterOptions;
  readonly #tracked = new Map<string, Tracked>();

  /** Makes an ingester writing into `store`. */
  constructor(store: LogStore, options: IngesterOptions) {
    this.#store = store;
    this.#options = options;
  }

  /** Reads the container list from disk: new containers are tracked, vanished ones marked gone. */
  async scan(nowMs: number = Date.now()): Promise<void> {
    const scan = await scanContainers(this.#options.dockerRoot);
    const seen = new Set([...scan.containers.map((c) => c.containerId), ...scan.unreadable]);
    for (const found of scan.containers) {
      if (this.#tracked.has(found.containerId)) continue;
      const stored = this.#store.upsertContainer(found, nowMs);
      this.#tracked.set(found.containerId, { found, key: stored.key, cursor: stored.cursor });
    }
    for (const id of this.#tracked.keys()) {
      if (!seen.has(id)) this.#tracked.delete(id);
    }
    for (const id of this.#store.presentContainers()) {
      if (!seen.has(id)) this.#store.markGone(id, nowMs);
    }
  }

  /** Copies every tracked container's new entries into the store. */
  async poll(signal?: AbortSignal): Promise<PollReport> {
    const report: PollReport = { lines: 0, corruptBytes: 0 };
    for (const tracked of this.#tracked.values()) {
      if (signal?.aborted) break;
      try {
        await this.#pollOne(tracked, report, signal);
      } catch (error) {
        const message = messageOf(error);
        this.#options.log?.(`Cannot read the logs of container "${tracked.found.containerId}": ${message}`);
      }
    }
    return report;
  }

  async #pollOne(tracked: Tracked, report: PollReport, signal: AbortSignal | undefined): Promise<void> {
    const batches = readLogBatches(tracked.found.logDir, tracked.cursor, { ...this.#options.read, signal });
    for await (const batch of batches) {
      this.#store.append(tracked.key, batch);
      tracked.cursor = batch.cursor;
      report.lines += batch.entries.length;
      report.corruptBytes += batch.corruptBytes;
      if (batch.gap) {
        this.#options.log?.(
          `Container "${tracked.found.containerId}" rotated its logs past the last read position: some output was not stored`,
        );
      }
    }
  }
}
