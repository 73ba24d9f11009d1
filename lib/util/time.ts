/**
 * Waiting: one sleep and one poll loop, both cancellable, one bound on an answer, and how a wait is named.
 *
 * @module
 */

/**
 * Resolves after `ms` milliseconds, or at once when `signal` aborts (it never rejects: a caller that must stop
 * on abort checks `signal.aborted` or calls `signal.throwIfAborted()` after it).
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener("abort", done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}

/** Options of {@linkcode pollUntil}. */
export interface PollOptions {
  /** How long to keep asking, in milliseconds. */
  timeoutMs: number;
  /** The pause between two asks. Default 250 ms. */
  intervalMs?: number;
  /** Stops polling early; the last answer is then returned. */
  signal?: AbortSignal;
}

/**
 * Asks `check` until it returns a value other than `undefined` and `false`, or until `timeoutMs` passed; returns
 * that value, or `undefined` when time ran out. `check` is always asked at least once, and once more at the
 * deadline.
 */
export async function pollUntil<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  options: PollOptions,
): Promise<T | undefined> {
  const until = Date.now() + options.timeoutMs;
  const interval = options.intervalMs ?? 250;
  while (true) {
    const answer = await check();
    if (answer !== undefined && answer !== false) return answer;
    const left = until - Date.now();
    if (left <= 0 || options.signal?.aborted) return undefined;
    await sleep(Math.min(interval, left), options.signal);
  }
}

/**
 * `answer`, or a rejection with `late()` once `ms` passed without it. The work behind `answer` is not cancelled: use
 * this where nothing can cancel it (a request a cut-off peer took answers nothing and closes nothing).
 */
export function answerWithin<T>(answer: Promise<T>, ms: number, late: () => Error): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
  });
  return Promise.race([answer, expired]).finally(() => clearTimeout(timer));
}

/** A duration as messages name it: whole seconds as `5 s`, anything else in milliseconds (`1500 ms`). */
export function describeMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
