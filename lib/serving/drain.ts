/**
 * Draining a container that left every proxy, before its Machine stops it (docs/bets.md, bet 9): once every
 * Machine's Ingress Proxy loaded a config without it, requests already sent to it may still be running. Caddy
 * 2.6 drops an upstream from `GET /reverse_proxy/upstreams` the moment a load removes it, while a request to it is
 * still in flight, so the count comes from the container's own side instead: the established TCP connections to a
 * port it listens on, from a peer other than itself (its own health probes dial loopback). Every proxy's requests
 * arrive there, so one reading covers all Machines. The wait is the caller's patience, bounded and short; the stop
 * goes ahead when it ends, and the answer says how long it drained and what was still open.
 *
 * @module
 */

import { sleep } from "../util/mod.ts";

/** The longest a Machine drains a container before stopping it anyway. */
export const DRAIN_BOUND_MS = 5_000;

const ESTABLISHED = "01";
const LISTEN = "0A";

// Hex addresses as /proc/net/tcp prints them: IPv4 as one little-endian word, IPv6 as four.
function loopback(hex: string): boolean {
  if (hex.length === 8) return hex.toUpperCase().endsWith("7F");
  const h = hex.toUpperCase();
  if (h === "00000000000000000000000001000000") return true;
  return h.startsWith("0000000000000000FFFF0000") && h.endsWith("7F");
}

function endpoint(field: string): { address: string; port: number } | undefined {
  const at = field.lastIndexOf(":");
  if (at <= 0) return undefined;
  const port = parseInt(field.slice(at + 1), 16);
  return Number.isFinite(port) ? { address: field.slice(0, at), port } : undefined;
}

/**
 * Connections in flight to a container: in its `/proc/<pid>/net/tcp` and `tcp6` tables, the established connections
 * whose local port is one it listens on and whose peer is not loopback. Pure; unreadable lines are skipped.
 */
export function inflightConnections(tables: readonly string[]): number {
  const rows: {
    local: { address: string; port: number };
    remote: { address: string; port: number };
    st: string;
  }[] = [];
  for (const table of tables) {
    for (const line of table.split("\n").slice(1)) {
      // sl local_address rem_address st ...
      const f = line.trim().split(/\s+/);
      if (f.length < 4) continue;
      const local = endpoint(f[1]);
      const remote = endpoint(f[2]);
      if (local === undefined || remote === undefined) continue;
      rows.push({ local, remote, st: f[3].toUpperCase() });
    }
  }
  const listening = new Set(rows.filter((r) => r.st === LISTEN).map((r) => r.local.port));
  return rows.filter((r) =>
    r.st === ESTABLISHED && listening.has(r.local.port) && !loopback(r.remote.address)
  )
    .length;
}

/** How a drain ended. */
export interface DrainResult {
  /** How long it waited. */
  drainedMs: number;
  /** Connections still open when it stopped waiting: 0 when drained, or when they could no longer be read. */
  inFlight: number;
  /** Whether the bound ended it with connections still open. */
  boundReached: boolean;
}

/** What {@link drainInflight} waits with; the clock and sleep are injectable for tests. */
export interface DrainOptions {
  /** The longest it waits. */
  boundMs: number;
  /** Between readings; default 100 ms. */
  pollMs?: number;
  /** Ends the wait early, as a bound does. */
  signal?: AbortSignal;
  /** Milliseconds now; default `Date.now`. */
  now?: () => number;
  /** Waits `ms`; default a timer. */
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Reads the connections in flight until none is left or the bound passes. `read` answers undefined when it cannot
 * tell (the container is gone, its tables unreadable): nothing is left to wait for, so the drain ends at once.
 */
export async function drainInflight(
  read: () => Promise<number | undefined>,
  options: DrainOptions,
): Promise<DrainResult> {
  const now = options.now ?? Date.now;
  const pause = options.sleep ?? sleep;
  const started = now();
  for (;;) {
    const open = await read();
    const waited = now() - started;
    if (open === undefined || open === 0) return { drainedMs: waited, inFlight: 0, boundReached: false };
    if (waited >= options.boundMs || options.signal?.aborted) {
      return { drainedMs: waited, inFlight: open, boundReached: true };
    }
    await pause(Math.max(1, Math.min(options.pollMs ?? 100, options.boundMs - waited)));
  }
}
