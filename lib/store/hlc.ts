/**
 * Hybrid logical clock. A timestamp is wall milliseconds plus a counter, encoded as 18 lowercase hex digits
 * (12 for milliseconds, 6 for the counter) so that string order equals time order.
 *
 * @module
 */

const MS_DIGITS = 12;
const COUNTER_DIGITS = 6;
const COUNTER_MAX = 0xffffff;
const MS_MAX = 0xffffffffffff;

/**
 * How far ahead of this Machine's wall clock a remote change's time may be: 5 minutes. A change further ahead is
 * refused, so one bad or hostile clock cannot drag every replica's clock (and every later write) into the future.
 */
export const MAX_CLOCK_SKEW_MS = 5 * 60 * 1000;

/** Matches an encoded timestamp. */
export const HLC_PATTERN: RegExp = /^[0-9a-f]{18}$/;

/** A decoded timestamp. */
export interface HlcTime {
  ms: number;
  counter: number;
}

/** Encodes a timestamp so that lexicographic order is time order. */
export function encodeHlc(time: HlcTime): string {
  // Out-of-range fields would change the width and break string order; never encode them.
  if (!(time.ms >= 0 && time.ms <= MS_MAX && time.counter >= 0 && time.counter <= COUNTER_MAX)) {
    throw new RangeError(`HLC out of range: ${time.ms} ms, counter ${time.counter}`);
  }
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

  /** How far `text` is ahead of the wall clock, in milliseconds (negative when behind). */
  aheadMs(text: string): number {
    return decodeHlc(text).ms - Math.floor(this.#now());
  }

  /**
   * Moves the clock past a timestamp seen in a change. The store refuses remote changes more than
   * {@linkcode MAX_CLOCK_SKEW_MS} ahead before they get here.
   */
  observe(text: string): void {
    const seen = decodeHlc(text);
    if (seen.ms > this.#last.ms || (seen.ms === this.#last.ms && seen.counter > this.#last.counter)) {
      this.#last = { ms: seen.ms, counter: seen.counter };
    }
  }

  #bump(): void {
    // A full counter borrows from the millisecond field rather than wrapping, so order is kept; the time field
    // stays within the skew bound of the wall clock, so it never outgrows its 12 digits.
    if (this.#last.counter >= COUNTER_MAX) {
      this.#last = { ms: this.#last.ms + 1, counter: 0 };
    } else {
      this.#last = { ms: this.#last.ms, counter: this.#last.counter + 1 };
    }
  }
}
