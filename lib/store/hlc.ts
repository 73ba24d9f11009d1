/**
 * Hybrid logical clock. A timestamp is wall milliseconds plus a counter, encoded as 18 lowercase hex digits
 * (12 for milliseconds, 6 for the counter) so that string order equals time order.
 *
 * @module
 */

const MS_DIGITS = 12;
const COUNTER_DIGITS = 6;
const COUNTER_MAX = 0xffffff;

/** Matches an encoded timestamp. */
export const HLC_PATTERN: RegExp = /^[0-9a-f]{18}$/;

/** A decoded timestamp. */
export interface HlcTime {
  ms: number;
  counter: number;
}

/** Encodes a timestamp so that lexicographic order is time order. */
export function encodeHlc(time: HlcTime): string {
  return time.ms.toString(16).padStart(MS_DIGITS, "0") +
    time.counter.toString(16).padStart(COUNTER_DIGITS, "0");
}

/** Decodes a timestamp produced by {@linkcode encodeHlc}. */
export function decodeHlc(text: string): HlcTime {
  return {
    ms: parseInt(text.slice(0, MS_DIGITS), 16),
    counter: parseInt(text.slice(MS_DIGITS), 16),
  };
}

/** A clock that never goes backwards and stays ahead of every timestamp it has seen. */
export class HybridClock {
  #last: HlcTime = { ms: 0, counter: 0 };
  readonly #now: () => number;

  /** Creates a clock reading wall time from `now`. */
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Returns a timestamp later than every one issued or observed before. */
  tick(): string {
    const wall = Math.floor(this.#now());
    if (wall > this.#last.ms) {
      this.#last = { ms: wall, counter: 0 };
    } else {
      this.#bump();
    }
    return encodeHlc(this.#last);
  }

  /** Moves the clock past a timestamp seen in a remote change. */
  observe(text: string): void {
    const seen = decodeHlc(text);
    if (seen.ms > this.#last.ms || (seen.ms === this.#last.ms && seen.counter > this.#last.counter)) {
      this.#last = { ms: seen.ms, counter: seen.counter };
    }
  }

  #bump(): void {
    // A full counter borrows from the millisecond field rather than wrapping, so order is kept.
    if (this.#last.counter >= COUNTER_MAX) {
      this.#last = { ms: this.#last.ms + 1, counter: 0 };
    } else {
      this.#last = { ms: this.#last.ms, counter: this.#last.counter + 1 };
    }
  }
}
