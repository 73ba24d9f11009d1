/**
 * The Cluster link's peers: worked out from the replicated `machines` rows (then hints not yet replaced by a row),
 * kept until something they are read from changes; the peers last applied to the interface; departed peers kept a
 * short grace; the quarantined peers of retired Machines; and which peer a caller's address belongs to.
 *
 * @module
 */

import {
  clusterNetworkOf,
  DEFAULT_CLUSTER_NETWORK,
  type QuarantinedPeer,
  quarantinedPeers,
  usablePeers,
} from "../mesh/mod.ts";
import type { Machine, Store } from "../store/mod.ts";
import type { PeerHint } from "./cluster_link.ts";
import { CallerIndex } from "./mesh_rpc.ts";

/** A peer as the interface is configured with it. */
export interface Peer {
  machineId: string;
  publicKey: string;
  subnet: string;
  endpoints: string[];
}

/** A peer whose row was tombstoned, kept configured until `until` (epoch ms). */
export interface Departed {
  peer: Peer;
  until: number;
}

/** How long a peer whose row was tombstoned stays configured, so the answer to its last request still reaches it. */
export const DEPARTED_GRACE_MS = 30_000;

/**
 * The departed peers after applying `live`: a Machine that left (its row tombstoned) keeps its peer entry a little
 * longer, since the tombstone reached us inside its own request and our answer still has to travel back to it. A
 * retired Machine is gone: no grace. `newly` are the peers that departed just now, whose grace ends at `now + grace`.
 */
export function nextDeparted(input: {
  applied: readonly Peer[];
  live: readonly Peer[];
  departed: ReadonlyMap<string, Departed>;
  retired: ReadonlySet<string>;
  nowMs: number;
  graceMs?: number;
}): { departed: Map<string, Departed>; newly: Peer[] } {
  const { live, retired, nowMs } = input;
  const isLive = (key: string): boolean => live.some((l) => l.publicKey === key);
  const departed = new Map([...input.departed].filter(([, d]) => !retired.has(d.peer.machineId)));
  const newly: Peer[] = [];
  for (const p of input.applied) {
    if (isLive(p.publicKey) || departed.has(p.publicKey) || retired.has(p.machineId)) continue;
    departed.set(p.publicKey, { peer: p, until: nowMs + (input.graceMs ?? DEPARTED_GRACE_MS) });
    newly.push(p);
  }
  for (const [key, d] of departed) if (d.until <= nowMs || isLive(key)) departed.delete(key);
  return { departed, newly };
}

/** Options of {@link LinkPeers}. */
export interface LinkPeersOptions {
  store: Store;
  selfId: string;
  /** This Machine's subnet. */
  subnet: string;
  /** The Cluster network the settings name; the subnet's own when it was founded on another. */
  clusterNetwork?: string;
  hints?: PeerHint[];
  log: (line: string) => void;
}

/** The peers of one Cluster link; see the module comment. */
export class LinkPeers {
  readonly #options: LinkPeersOptions;
  readonly #clusterNetwork: string;
  readonly #hints = new Map<string, PeerHint>();
  readonly #skipped = new Map<string, string>();
  #applied: Peer[] = [];
  #departed = new Map<string, Departed>();
  // What #read worked out, kept until something it reads changes: a `machines` or `retired_machines` row (the
  // store's commits say), a hint, or the peers applied. Sync rounds and requests then read no rows.
  #view: Peer[] | undefined;
  readonly #callerIndex = new CallerIndex(() =>
    [...this.current(), ...this.#departedPeers()].map((p) => ({
      id: p.machineId,
      subnet: p.subnet,
      "public_key": p.publicKey,
    }))
  );

  /** Peers of the store's rows, with `hints` until their rows arrive. */
  constructor(options: LinkPeersOptions) {
    this.#options = options;
    this.#clusterNetwork = clusterNetworkOf(
      options.subnet,
      options.clusterNetwork ?? DEFAULT_CLUSTER_NETWORK,
    );
    for (const hint of options.hints ?? []) this.#hints.set(hint.publicKey, hint);
  }

  /** Uses a peer before its row arrives. */
  hint(hint: PeerHint): void {
    this.#hints.set(hint.publicKey, hint);
    this.changed();
  }

  /** Something the peers are read from changed: the next question works them out again. */
  changed(): void {
    this.#view = undefined;
    this.#callerIndex.invalidate();
  }

  /**
   * Rows (then hints not yet replaced by a row) this Machine can use as peers. A row it cannot use (no key, a
   * subnet that is not a /24 inside the Cluster network, or overlapping its own or another's) is skipped and
   * reported once per reason: it never takes over a route or stops the others from being configured.
   */
  current(): Peer[] {
    this.#view ??= this.#read();
    return this.#view;
  }

  /** The peers last applied to the interface; the current ones before any was. */
  applied(): Peer[] {
    return this.#applied.length > 0 ? this.#applied : this.current();
  }

  /**
   * Applies the current peers: departed ones start their grace. Returns every peer to configure (live, then
   * departed) and those that departed just now.
   */
  apply(nowMs: number): { peers: Peer[]; newlyDeparted: Peer[] } {
    const store = this.#options.store;
    const live = this.current();
    const next = nextDeparted({
      applied: this.#applied,
      live,
      departed: this.#departed,
      retired: store.closed ? new Set<string>() : store.retiredIds(),
      nowMs,
    });
    this.#departed = next.departed;
    this.#applied = live;
    // The incumbents and the departed peers #read and caller() read may have moved.
    this.changed();
    return { peers: [...live, ...this.#departedPeers()], newlyDeparted: next.newly };
  }

  /** The Machine id a caller's address belongs to, when it is a current (or just departed) peer. */
  caller(address: string): string | undefined {
    return this.#callerIndex.caller(address, this.#options.selfId)?.id;
  }

  /** The Machine id of the peer a sync URL names. */
  callerOfUrl(url: string): string | undefined {
    try {
      return this.caller(new URL(url).hostname);
    } catch {
      return undefined;
    }
  }

  /** Retired Machines to keep as quarantined peers, none whose key is live (`liveKeys`) or this Machine's. */
  quarantined(liveKeys: ReadonlySet<string>): QuarantinedPeer[] {
    const store = this.#options.store;
    if (store.closed) return [];
    const candidates = store.retiredMachines.list().flatMap((r) => {
      const row = store.machines.get(r.machine_id);
      return row === undefined ? [] : [{
        machineId: row.id,
        publicKey: row.public_key,
        subnet: row.subnet ?? r.subnet,
      }];
    });
    return quarantinedPeers(candidates, {
      selfId: this.#options.selfId,
      clusterNetwork: this.#clusterNetwork,
      liveKeys,
      ownKey: store.machines.get(this.#options.selfId)?.public_key,
    });
  }

  #departedPeers(): Peer[] {
    return [...this.#departed.values()].map((d) => d.peer);
  }

  #read(): Peer[] {
    const { store, selfId, log } = this.#options;
    // A retired Machine is no peer: its handshakes are no longer accepted (machine rm --gone).
    const rows: Machine[] = store.closed ? [] : store.liveMachines();
    const keys = new Set(rows.filter((r) => r.id !== selfId).map((r) => r.public_key));
    for (const key of this.#hints.keys()) if (keys.has(key)) this.#hints.delete(key);
    const verdict = usablePeers([
      ...rows.map((r) => ({
        machineId: r.id,
        publicKey: r.public_key,
        subnet: r.subnet,
        endpoints: r.endpoints,
      })),
      ...this.#hints.values(),
    ], {
      selfId,
      ownSubnet: this.#options.subnet,
      clusterNetwork: this.#clusterNetwork,
      incumbents: new Map(this.#applied.map((p) => [p.subnet, p.machineId])),
    });
    const seen = new Set<string>();
    for (const { machineId, reason } of verdict.skipped) {
      seen.add(machineId);
      if (this.#skipped.get(machineId) === reason) continue;
      this.#skipped.set(machineId, reason);
      log(`mesh: skipping Machine "${machineId}" as a peer: ${reason}`);
    }
    for (const id of this.#skipped.keys()) if (!seen.has(id)) this.#skipped.delete(id);
    return verdict.peers;
  }
}
