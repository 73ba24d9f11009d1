/**
 * Leaving every proxy before a client stops a container (`ployz.container.leave.v1`): the container is marked
 * leaving, its row republished, and the route waits, within the caller's patience, for the Machines not Down to
 * ack that they dropped it; then requests a proxy sent before it dropped the container are drained.
 *
 * @module
 */

import { type LeaveContainerRequest, type LeaveContainerResponse, RpcError } from "../rpc/mod.ts";
import { DRAIN_BOUND_MS, drainInflight, inflightConnections } from "../serving/mod.ts";
import { sleep } from "../util/mod.ts";
import { requireParticipating } from "./container_admission.ts";
import { type ContainerHost, linked } from "./container_host.ts";
import { hostProcRoot } from "./port_holder.ts";

const LIVE = new Set(["running", "restarting", "paused"]);

/** Marks the container leaving, waits for the acks within `wait_ms`, then drains what is still in flight. */
export async function leaveContainer(
  host: ContainerHost,
  req: LeaveContainerRequest,
  signal: AbortSignal,
): Promise<LeaveContainerResponse> {
  const leaving = host.leaving;
  if (leaving === undefined) {
    throw new RpcError("unsupported", "This Machine cannot take a container out of its proxies", {
      details: { capability: "ployz.container.leave.v1" },
    });
  }
  requireParticipating(host.record(), "take a container out of the proxies");
  const o = await host.engine.inspectContainer(req.id, signal);
  if (o === undefined || !o.owned) {
    throw new RpcError(
      "not_found",
      `Cannot take container "${req.id}" out of the proxies: no such container`,
      {
        details: { container: req.id },
      },
    );
  }
  if (!LIVE.has(o.state)) return { id: o.id, live: false, acked: [], missing: [], "waited_ms": 0 };
  const started = Date.now();
  if (!leaving.marks.has(o.id)) leaving.marks.set(o.id, new Date().toISOString());
  await leaving.republish();
  // The caller's patience, not a safety wait: it decides what to do when acks are missing.
  const { status, waited } = await waitForAcks(() => leaving.status(o.id), {
    startedMs: started,
    waitMs: req.wait_ms,
    signal,
    pause: (ms) => sleep(ms, linked(host, signal)),
  });
  // Requests a proxy sent before it dropped the container may still run: drained within what is left of the
  // caller's patience, at most DRAIN_BOUND_MS; patience too, the stop goes ahead when it ends.
  const drain = await drainInflight(() => readInflight(o.pid), {
    boundMs: Math.min(DRAIN_BOUND_MS, Math.max(0, req.wait_ms - waited)),
    signal,
  });
  return {
    id: o.id,
    live: true,
    ...status,
    "waited_ms": waited,
    "drained_ms": drain.drainedMs,
    "in_flight": drain.inFlight,
  };
}

/** Options of {@link waitForAcks}. */
export interface AckWaitOptions {
  /** When the wait began (epoch ms); the marking and the republish count against the patience. */
  startedMs: number;
  /** The caller's patience, in milliseconds from `startedMs`. */
  waitMs: number;
  /** The caller went away: answer with what is known now. */
  signal: AbortSignal;
  /** Pauses between reads, at most 100 ms each. */
  pause(ms: number): Promise<void>;
  /** The clock; default `Date.now`. */
  now?: () => number;
}

/**
 * Reads the ack status until no Machine is missing, the patience ends or the caller goes away; the last status
 * read and how long the wait took.
 */
export async function waitForAcks<S extends { missing: readonly string[] }>(
  status: () => S,
  options: AckWaitOptions,
): Promise<{ status: S; waited: number }> {
  const now = options.now ?? Date.now;
  for (;;) {
    const current = status();
    const waited = now() - options.startedMs;
    if (current.missing.length === 0 || waited >= options.waitMs || options.signal.aborted) {
      return { status: current, waited };
    }
    await options.pause(Math.min(100, options.waitMs - waited));
  }
}

// Connections in flight to the container, from its own TCP tables; undefined when they cannot be read (it exited).
async function readInflight(pid: number | undefined): Promise<number | undefined> {
  if (pid === undefined) return undefined;
  try {
    const root = `${hostProcRoot()}/${pid}/net`;
    const tables = [await Deno.readTextFile(`${root}/tcp`)];
    try {
      tables.push(await Deno.readTextFile(`${root}/tcp6`));
    } catch { /* no IPv6 */ }
    return inflightConnections(tables);
  } catch {
    return undefined;
  }
}
