/**
 * TailLogs: a selector's recent lines, then every new line as the ingester stores it, until the caller stops.
 *
 * @module
 */

import {
  historyQuery,
  isSelective,
  lastLineId,
  linesAfter,
  type LogLine,
  type LogSelector,
  selectContainers,
} from "./log_query.ts";
import type { LogStore } from "./log_store.ts";

/** A TailLogs request. */
export interface TailQuery extends LogSelector {
  /** Start with the lines at or after this time (ns), up to `backlog` of them; default: only new lines. */
  since?: bigint;
  /** How many earlier lines to send first when `since` is given. Default 100. */
  backlog?: number;
  /** Keep only lines containing this text (plain, case-sensitive). */
  grep?: string;
}

/** What a tail yields: lines, and notes (e.g. that nothing matches yet). */
export type TailEvent = { kind: "line"; line: LogLine } | { kind: "note"; message: string };

/** Options of {@link tailLogs}. */
export interface TailOptions {
  /** Ends the tail. */
  signal: AbortSignal;
  /** How long to wait for a wake-up before looking again anyway. Default 1000 ms. */
  pollMs?: number;
}

/**
 * Yields the backlog, then new lines in the order they were stored. Containers that start matching the selector
 * later (a new Deployment of the Service) are picked up as they appear.
 */
export async function* tailLogs(
  store: LogStore,
  query: TailQuery,
  options: TailOptions,
): AsyncGenerator<TailEvent> {
  const db = store.database;
  const selective = isSelective(query);
  let containers = selectContainers(db, query);
  // The backlog and the starting id are read together, with no append in between (one thread, sync SQLite).
  let lastId = lastLineId(db);
  if (query.since !== undefined && containers.size > 0) {
    const backlog = historyQuery(db, { ...query, since: query.since, limit: query.backlog ?? 100 });
    for (const line of backlog.lines) yield { kind: "line", line };
  }
  if (containers.size === 0) {
    yield {
      kind: "note",
      message: "No container on this Machine matches yet; lines will follow when one writes output",
    };
  }
  let wake: (() => void) | undefined;
  const unsubscribe = store.onAppend(() => wake?.());
  try {
    while (!options.signal.aborted) {
      containers = selectContainers(db, query);
      const lines = containers.size === 0
        ? []
        : linesAfter(db, lastId, containers, selective, query.grep, 1000);
      if (lines.length > 0) {
        lastId = lines[lines.length - 1].id;
        for (const line of lines) yield { kind: "line", line };
        continue;
      }
      // Nothing matched: skip past what other containers wrote (no append can land between the two reads).
      lastId = Math.max(lastId, lastLineId(db));
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, options.pollMs ?? 1000);
        options.signal.addEventListener("abort", done, { once: true });
        wake = done;
        function done(): void {
          clearTimeout(timer);
          options.signal.removeEventListener("abort", done);
          wake = undefined;
          resolve();
        }
      });
    }
  } finally {
    unsubscribe();
  }
}
