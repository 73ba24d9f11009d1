// Waiting in end-to-end tests: a condition polled with a deadline that fails the test naming what never came.
// The loop and the sleep are lib/util's.
import { pollUntil } from "../../lib/util/mod.ts";

export { sleep } from "../../lib/util/mod.ts";

/**
 * Polls `check` every `everyMs` until it returns a value other than undefined; a throw counts as "not yet". After
 * `ms` it throws, naming `what` and the last error.
 */
export async function eventually<T>(
  ms: number,
  what: string,
  check: () => T | undefined | Promise<T | undefined>,
  everyMs = 500,
): Promise<T> {
  let last: unknown;
  // Boxed, so that `false` is an answer like any other value.
  const answer = await pollUntil(async () => {
    try {
      const value = await check();
      return value === undefined ? undefined : { value };
    } catch (error) {
      last = error;
      return undefined;
    }
  }, { timeoutMs: ms, intervalMs: everyMs });
  if (answer !== undefined) return answer.value;
  throw new Error(`${what}: not within ${ms / 1000} s${last === undefined ? "" : `: ${last}`}`);
}
