/**
 * The publisher: this Machine writes its own containers into the replicated `containers` table, and nothing
 * else's. It follows Docker events of owned containers and rescans every owned container on a timer (default
 * 30 s); a row whose container is gone becomes a tombstone. Rows carry environment names, never values; the full
 * spec stays in the container's own labels and environment on this Machine.
 *
 * This is observation of Machine-local state, not reconciliation: it never starts, stops or creates anything.
 *
 * @module
 */

import type { Engine, ObservedContainer } from "../deploy/machine/mod.ts";
import type { Container, Store } from "../store/mod.ts";
import { toRow } from "./observed.ts";
import { messageOf, sleep } from "../util/mod.ts";

/** Options of {@link startPublisher}. */
export interface PublisherOptions {
  /** This Machine's Docker. */
  engine: Engine;
  /** This Machine's copy of the store; rows are written with its site id. */
  store: Store;
  /** Full rescan period; default 30 s. */
  rescanMs?: number;
  /** Pause before following events again after Docker broke the stream; default 2 s. */
  retryMs?: number;
  /** One line per notable event. */
  log?: (line: string) => void;
  /**
   * Containers a client asked to leave every proxy before it stops them (container id → when): a live one's row
   * carries `stopping`; an entry whose container no longer runs is forgotten, so a later start serves again.
   */
  leaving?: Map<string, string>;
}

/** A running publisher. */
export interface Publisher {
  /** Rescans now (after anything queued) and resolves when the rows match what Docker showed. */
  rescan(): Promise<void>;
  /** Stops following events and the timer; resolves once the last write finished. */
  stop(): Promise<void>;
}

const LIVE = new Set(["running", "restarting", "paused"]);

/** Starts publishing: one rescan at once, then events and the periodic rescan. */
export function startPublisher(options: PublisherOptions): Publisher {
  const { engine, store } = options;
  const machineId = store.siteId;
  const log = options.log ?? (() => {});
  const controller = new AbortController();
  const signal = controller.signal;
  // One queue for events and rescans, so an older observation never overwrites a newer one.
  let tail: Promise<void> = Promise.resolve();

  function enqueue(task: () => Promise<void>): Promise<void> {
    const run = tail.then(async () => {
      if (signal.aborted || store.closed) return;
      try {
        await task();
      } catch (error) {
        if (!signal.aborted) log(`publisher: ${messageOf(error)}`);
      }
    });
    tail = run;
    return run;
  }

  function ownRows(): Container[] {
    return store.containers.list({ "machine_id": machineId });
  }

  function publish(observed: ObservedContainer): void {
    const row = toRow(observed, machineId);
    const leavingSince = options.leaving?.get(observed.id);
    if (leavingSince !== undefined) {
      if (LIVE.has(observed.state)) row.stopping = leavingSince;
      else options.leaving!.delete(observed.id);
    }
    const current = store.containers.get(row.id);
    if (current !== undefined && JSON.stringify(current) === JSON.stringify(row)) return;
    store.containers.put(row);
  }

  function unpublish(id: string): void {
    const current = store.containers.get(id);
    if (current === undefined || current.machine_id !== machineId) return;
    store.containers.delete(id);
  }

  async function rescanTask(): Promise<void> {
    const scan = await engine.rescan(signal);
    if (store.closed) return;
    const seen = new Set<string>();
    for (const observed of scan.containers) {
      seen.add(observed.id);
      publish(observed);
    }
    for (const row of ownRows()) if (!seen.has(row.id)) unpublish(row.id);
  }

  async function refreshTask(id: string): Promise<void> {
    const observed = await engine.inspectContainer(id, signal);
    if (store.closed) return;
    if (observed === undefined || !observed.owned) unpublish(id);
    else publish(observed);
  }

  async function follow(): Promise<void> {
    let sinceMs = Date.now();
    while (!signal.aborted) {
      try {
        for await (const event of engine.events(signal, { sinceMs })) {
          sinceMs = event.at;
          void enqueue(() => refreshTask(event.id));
        }
      } catch (error) {
        if (signal.aborted) break;
        log(`publisher: ${messageOf(error)}; rescanning`);
        await sleep(options.retryMs ?? 2_000, signal);
        // Events may have been lost while the stream was down: the rescan closes the gap.
        void enqueue(rescanTask);
      }
    }
  }

  const following = follow();
  void enqueue(rescanTask);
  const timer = setInterval(() => void enqueue(rescanTask), options.rescanMs ?? 30_000);

  return {
    rescan: () => enqueue(rescanTask),
    async stop(): Promise<void> {
      clearInterval(timer);
      controller.abort();
      await following;
      await tail;
    },
  };
}
