/**
 * Sources that can block (a `statfs` on a hung mount, later `zfs list`) run on their own tick, by default every
 * 60 s with a 5 s timeout, never inside the 10 s sampling round. The round only takes each source's latest
 * result: a number, or the gap `timeout` (no answer in time; a read still outstanding is not started again) or
 * `source_failed`.
 *
 * @module
 */

import { statfs } from "node:fs/promises";
import { gap, type Reading } from "./gaps.ts";
import type { MetricName, Values } from "./metric_names.ts";
import { messageOf, sleep } from "../../util/mod.ts";

/** A value read from something that may block. */
export interface SlowSource {
  /** The Machine metric the value is recorded as. */
  metric: MetricName;
  /** Reads the value; should stop when `signal` aborts (after the timeout). */
  read(signal: AbortSignal): Promise<number>;
}

/** Options of {@link SlowTick}. */
export interface SlowTickOptions {
  /** The sources. */
  sources: SlowSource[];
  /** Default 60000 ms. */
  intervalMs?: number;
  /** Default 5000 ms. */
  timeoutMs?: number;
  /** Receives one line when a source times out or fails (once per change). */
  log?: (line: string) => void;
}

interface SourceState {
  source: SlowSource;
  latest: Reading | undefined;
  outstanding: boolean;
}

/** Runs slow sources on their own schedule; see the module doc. */
export class SlowTick {
  readonly #states: SourceState[];
  readonly #intervalMs: number;
  readonly #timeoutMs: number;
  readonly #log: ((line: string) => void) | undefined;

  /** A tick over `options.sources`; call {@link SlowTick.run} to start it. */
  constructor(options: SlowTickOptions) {
    this.#states = options.sources.map((source) => ({ source, latest: undefined, outstanding: false }));
    this.#intervalMs = options.intervalMs ?? 60_000;
    this.#timeoutMs = options.timeoutMs ?? 5000;
    this.#log = options.log;
  }

  /** The latest result of each source that has one; the sampling round calls this and never waits. */
  values(): Values {
    const values: Values = {};
    for (const s of this.#states) if (s.latest !== undefined) values[s.source.metric] = s.latest;
    return values;
  }

  /** Reads every source once; resolves within the timeout even when a source never answers. */
  async tick(): Promise<void> {
    await Promise.all(this.#states.map((s) => this.#readOne(s)));
  }

  /** Ticks now and then every interval until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.tick();
      await sleep(this.#intervalMs, signal);
    }
  }

  async #readOne(state: SourceState): Promise<void> {
    // Still waiting on the previous read: that source stays a timeout and gets no second reader.
    if (state.outstanding) return;
    state.outstanding = true;
    const abort = new AbortController();
    const timedOut = Promise.withResolvers<"timeout">();
    const timer = setTimeout(() => timedOut.resolve("timeout"), this.#timeoutMs);
    const reading = state.source.read(abort.signal).then(
      (value): Reading => (Number.isFinite(value) ? value : gap("source_failed")),
      (error): Reading => {
        this.#note(state, `failed: ${messageOf(error)}`);
        return gap("source_failed");
      },
    );
    reading.finally(() => {
      state.outstanding = false;
    });
    const result = await Promise.race([reading, timedOut.promise]);
    clearTimeout(timer);
    if (result === "timeout") {
      abort.abort();
      this.#note(state, `did not answer within ${this.#timeoutMs} ms`);
      state.latest = gap("timeout");
    } else {
      state.latest = result;
    }
  }

  #note(state: SourceState, what: string): void {
    const previous = state.latest;
    if (typeof previous === "object" && previous !== null) return;
    this.#log?.(`Slow metric source "${state.source.metric}" ${what}: recorded as a gap`);
  }
}

/** Free bytes of the file system holding `path`, read without blocking the event loop. */
export function diskFreeSource(path: string): SlowSource {
  return {
    metric: "disk_free",
    async read(): Promise<number> {
      const s = await statfs(path);
      return Number(s.bavail) * Number(s.bsize);
    },
  };
}
