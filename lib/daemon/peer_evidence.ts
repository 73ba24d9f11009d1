/**
 * What the Cluster link notes about its peers as evidence for membership: when store traffic last came from each
 * Machine, when its WireGuard peer last counted bytes received, and the replicated changes refused per delivering
 * Machine. All of it is bounded: a flood of forged changes cannot grow memory or the log without end.
 *
 * @module
 */

import { networkContains, parseIpv4, parseIpv4Network, type PeerReport } from "../mesh/mod.ts";
import type { Rejection } from "../store/mod.ts";

/** Most delivering Machines whose refusals are counted apart. */
const MAX_REFUSING_MACHINES = 4096;
/** Most distinct refusal reasons logged. */
const MAX_REFUSAL_REASONS = 256;

/** What this Machine holds as evidence about its peers. */
export interface PeerEvidence {
  /** Latest handshake per public key (ms since the epoch). */
  handshakes: Map<string, number | undefined>;
  /** Last store traffic received per Machine id (ms since the epoch). */
  traffic: Map<string, number>;
  /** When the interface last counted bytes received from each peer, per public key (ms since the epoch); read at
   * each tick, so as fresh as the tick period. Keepalives (every 25 s) and every reply count. */
  received: Map<string, number>;
  /** Replicated changes refused since the daemon started, per Machine id that delivered them (pushed or pulled). */
  refused?: Map<string, number>;
  /** Why the interface could not be read, if so. */
  error?: string;
}

/** Store traffic and interface counters, per peer. */
export class PeerTraffic {
  readonly #traffic = new Map<string, number>();
  readonly #received = new Map<string, number>();
  readonly #rxBytes = new Map<string, number>();

  /** Last store traffic received per Machine id (ms since the epoch), a copy. */
  traffic(): Map<string, number> {
    return new Map(this.#traffic);
  }

  /** When the interface last counted bytes received from each peer, per public key, a copy. */
  received(): Map<string, number> {
    return new Map(this.#received);
  }

  /** Notes one reading of the interface: a peer whose received bytes grew was heard from now. */
  noteReceived(reports: readonly PeerReport[], now: number = Date.now()): void {
    for (const p of reports) {
      const before = this.#rxBytes.get(p.publicKey);
      if (before !== undefined && p.rxBytes > before) this.#received.set(p.publicKey, now);
      this.#rxBytes.set(p.publicKey, p.rxBytes);
    }
  }

  /** Notes store traffic from `address`: the peer (of `peers()`, read only for an IPv4 address) whose subnet holds it. */
  noteAddress(
    address: string,
    peers: () => readonly { machineId: string; subnet: string }[],
    now: number = Date.now(),
  ): void {
    let ip: number;
    try {
      ip = parseIpv4(address);
    } catch {
      return;
    }
    for (const peer of peers()) {
      try {
        if (networkContains(parseIpv4Network(peer.subnet), ip)) this.#traffic.set(peer.machineId, now);
      } catch {
        // unreadable subnet
      }
    }
  }
}

/** Replicated changes refused: a count, a count per delivering Machine, and each distinct reason logged once. */
export class RefusalLog {
  readonly #log: (line: string) => void;
  readonly #reasons = new Set<string>();
  readonly #byMachine = new Map<string, number>();
  #count = 0;

  /** A log writing its lines to `log`. */
  constructor(log: (line: string) => void) {
    this.#log = log;
  }

  /** Changes refused so far. */
  get count(): number {
    return this.#count;
  }

  /** Changes refused per Machine id that delivered them, a copy. */
  byMachine(): Map<string, number> {
    return new Map(this.#byMachine);
  }

  /** Counts `rejected` (from `from`, delivered by `deliveredBy` when known) and logs each new reason once. */
  note(from: string, rejected: readonly Rejection[], deliveredBy: string | undefined): void {
    this.#count += rejected.length;
    if (
      deliveredBy !== undefined &&
      (this.#byMachine.has(deliveredBy) || this.#byMachine.size < MAX_REFUSING_MACHINES)
    ) {
      this.#byMachine.set(deliveredBy, (this.#byMachine.get(deliveredBy) ?? 0) + rejected.length);
    }
    for (const r of rejected) {
      const reason = r.reason.replace(/^Refused change [^:]*:\d+: /, "").slice(0, 300);
      if (this.#reasons.has(reason) || this.#reasons.size >= MAX_REFUSAL_REASONS) continue;
      this.#reasons.add(reason);
      this.#log(`store: refused a change from ${from}: ${r.reason.slice(0, 300)} (${this.#count} so far)`);
    }
  }
}
