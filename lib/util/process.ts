/**
 * Stopping a child process this process spawned.
 *
 * @module
 */

import { sleep } from "./time.ts";

/** Options of {@linkcode stopChild}. */
export interface StopOptions {
  /** The first signal. Default SIGTERM. */
  signal?: Deno.Signal;
  /** Send SIGKILL when the child has not exited this long after the first signal; by default wait for it. */
  killAfterMs?: number;
}

/** Signals `child` (SIGTERM by default) and resolves with its status once it exited; a child already gone is fine. */
export async function stopChild(
  child: Deno.ChildProcess,
  options: StopOptions = {},
): Promise<Deno.CommandStatus> {
  signal(child, options.signal ?? "SIGTERM");
  if (options.killAfterMs === undefined) return await child.status;
  const stop = new AbortController();
  const exited = child.status.finally(() => stop.abort());
  await sleep(options.killAfterMs, stop.signal);
  if (!stop.signal.aborted) signal(child, "SIGKILL");
  return await exited;
}

function signal(child: Deno.ChildProcess, name: Deno.Signal): void {
  try {
    child.kill(name);
  } catch {
    // Already gone.
  }
}
