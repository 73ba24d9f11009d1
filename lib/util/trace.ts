/**
 * `PLOYZ_TRACE=1`: one line on standard error per mark, `ployz trace <ms> <label>`, the time in milliseconds since
 * the process started. It shows where a command's time goes (its phases, each RPC) without a profiler; unset, a
 * mark costs one comparison.
 *
 * @module
 */

let tracing: boolean | undefined;

/** Whether `PLOYZ_TRACE=1`, read once; a process that may not read it does not trace. */
function enabled(): boolean {
  if (tracing === undefined) {
    try {
      tracing = Deno.env.get("PLOYZ_TRACE") === "1";
    } catch {
      tracing = false;
    }
  }
  return tracing;
}

/** The line a mark writes: `ployz trace <ms since start, one decimal> <label>`. */
export function traceLine(label: string, at: number = performance.now()): string {
  return `ployz trace ${at.toFixed(1).padStart(8)} ${label}`;
}

/** Writes `label` with the time since the process started to standard error, when `PLOYZ_TRACE=1`. */
export function traceMark(label: string): void {
  if (enabled()) console.error(traceLine(label));
}
