/**
 * The lab's latency relay: a userspace UDP forwarder between Machines' WireGuard endpoints, because this kernel has
 * no `netem`. For each ordered pair of Machines (a, b) it holds one socket, port(a, b); Machine a's endpoint for b is
 * relay:port(a, b). A datagram arriving on port(a, b) is held for latency ± jitter, then sent from port(b, a) to b's
 * real endpoint, so b sees it come from relay:port(b, a), which is exactly b's endpoint for a: WireGuard's roaming
 * keeps both sides pointed at the relay.
 *
 * @module
 */

import { createSocket, type Socket } from "node:dgram";

/** A relay's configuration (the file `ployz lab relay` reads). */
export interface RelayConfig {
  /** The address the relay binds (on the lab bridge). */
  bindAddress: string;
  /** One-way delay added to each datagram, in ms. */
  latencyMs: number;
  /** Uniform jitter, ± ms. */
  jitterMs: number;
  /** Every Machine's real WireGuard endpoint, by Machine name. */
  endpoints: Record<string, { host: string; port: number }>;
  /** The relay port of each ordered pair, `"<a>><b>"` → port. */
  ports: Record<string, number>;
}

/** The relay port of pair (a, b) when Machines are numbered from 1. */
export function relayPort(a: number, b: number): number {
  return 52000 + a * 100 + b;
}

/** A running relay. */
export interface Relay {
  /** Datagrams forwarded so far. */
  forwarded(): number;
  /** Closes every socket and drops datagrams still held. */
  close(): Promise<void>;
}

/** Starts a relay; resolves once every socket is bound. */
export async function startRelay(config: RelayConfig, random: () => number = Math.random): Promise<Relay> {
  const sockets = new Map<string, Socket>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  let forwarded = 0;
  let closed = false;
  const bound: Promise<void>[] = [];
  for (const [pair, port] of Object.entries(config.ports)) {
    const socket = createSocket("udp4");
    sockets.set(pair, socket);
    bound.push(
      new Promise((resolve, reject) => {
        socket.once("error", reject);
        socket.bind(port, config.bindAddress, () => {
          socket.off("error", reject);
          resolve();
        });
      }),
    );
  }
  for (const [pair, socket] of sockets) {
    const [a, b] = pair.split(">");
    const out = sockets.get(`${b}>${a}`);
    const target = config.endpoints[b];
    if (out === undefined || target === undefined) continue;
    socket.on("message", (message: Uint8Array) => {
      if (closed) return;
      const delay = Math.max(0, config.latencyMs + (random() * 2 - 1) * config.jitterMs);
      const timer = setTimeout(() => {
        timers.delete(timer);
        if (closed) return;
        forwarded++;
        out.send(message, target.port, target.host);
      }, delay);
      timers.add(timer);
    });
    socket.on("error", () => {}); // an unreachable peer (ICMP) must not stop the relay
  }
  await Promise.all(bound);
  return {
    forwarded: () => forwarded,
    async close(): Promise<void> {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      await Promise.all(
        [...sockets.values()].map((s) => new Promise<void>((resolve) => s.close(() => resolve()))),
      );
    },
  };
}
