/**
 * A daemon's stop with a bound: whatever has not finished by then must not keep the process from exiting
 * (`ployzd` exits once its subcommand returns), and the failure names what the stop was still waiting for.
 *
 * @module
 */

import { answerWithin, describeMs } from "../util/mod.ts";

/**
 * Runs `stop`; when it has not finished within `ms`, rejects naming `stage()`, what it was doing then. An error
 * of `stop` itself passes through unchanged.
 */
export async function stopWithin(stop: Promise<void>, ms: number, stage: () => string): Promise<void> {
  const late = new Error("late");
  try {
    await answerWithin(stop, ms, () => late);
  } catch (error) {
    if (error !== late) throw error;
    throw new Error(`The daemon's stop was still ${stage()} after ${describeMs(ms)}; exiting without it`);
  }
}
