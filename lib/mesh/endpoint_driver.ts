/**
 * Applies endpoint selection to a real interface. Each {@link EndpointDriver.tick} reads the interface once, advances
 * every peer's selection and sets the endpoints that changed, then returns. It runs nothing on its own schedule: the
 * daemon's network plane (or a test) calls `tick` when it wants a step.
 *
 * @module
 */

import {
  DEFAULT_ENDPOINT_TIMING,
  type EndpointSelection,
  type EndpointTiming,
  newEndpointSelection,
  pollEndpoint,
  replaceCandidates,
  selectedEndpoint,
} from "./endpoint.ts";
import type { CommandRunner } from "./runner.ts";
import { type PeerReport, readPeers, setPeerEndpoint } from "./wireguard.ts";

/** One endpoint change a tick made. */
export interface EndpointChange {
  /** The peer. */
  publicKey: string;
  /** The endpoint now set. */
  endpoint: string;
}

/** Drives endpoint selection for every peer of one interface. */
export class EndpointDriver {
  readonly #runner: CommandRunner;
  readonly #name: string;
  readonly #timing: EndpointTiming;
  readonly #selections = new Map<string, EndpointSelection>();

  /** A driver for interface `name` where `runner` runs. */
  constructor(runner: CommandRunner, name: string, timing: EndpointTiming = DEFAULT_ENDPOINT_TIMING) {
    this.#runner = runner;
    this.#name = name;
    this.#timing = timing;
  }

  /**
   * Sets the peers' Advertised Endpoints; new peers start from `remembered` (a selection saved earlier) or their
   * first candidate. Peers not listed are forgotten. Returns the endpoints the caller must set now; pass them
   * through {@link EndpointDriver.tick} or apply them with `setPeers`.
   */
  setCandidates(
    peers: readonly { publicKey: string; endpoints: readonly string[]; remembered?: string }[],
    now: number = Date.now(),
  ): EndpointChange[] {
    const changes: EndpointChange[] = [];
    const keep = new Set(peers.map((p) => p.publicKey));
    for (const key of this.#selections.keys()) if (!keep.has(key)) this.#selections.delete(key);
    for (const peer of peers) {
      const existing = this.#selections.get(peer.publicKey);
      if (existing === undefined) {
        const selection = newEndpointSelection(peer.endpoints, peer.remembered, now);
        this.#selections.set(peer.publicKey, selection);
        const endpoint = selectedEndpoint(selection);
        if (endpoint !== undefined) changes.push({ publicKey: peer.publicKey, endpoint });
        continue;
      }
      const { selection, changed } = replaceCandidates(existing, peer.endpoints, now);
      this.#selections.set(peer.publicKey, selection);
      if (changed !== undefined) changes.push({ publicKey: peer.publicKey, endpoint: changed });
    }
    return changes;
  }

  /** The endpoint currently selected for a peer. */
  selected(publicKey: string): string | undefined {
    const selection = this.#selections.get(publicKey);
    return selection === undefined ? undefined : selectedEndpoint(selection);
  }

  /** The selection state of a peer, for status output. */
  state(publicKey: string): EndpointSelection["state"] | undefined {
    return this.#selections.get(publicKey)?.state;
  }

  /**
   * One step: read the interface (or take `read`, what the caller just read from it, saving a second `wg show`),
   * advance each peer, set the endpoints that changed; returns those changes.
   */
  async tick(now: number = Date.now(), read?: readonly PeerReport[]): Promise<EndpointChange[]> {
    const reports = new Map((read ?? await readPeers(this.#runner, this.#name)).map((p) => [p.publicKey, p]));
    const changes: EndpointChange[] = [];
    for (const [publicKey, selection] of this.#selections) {
      const report = reports.get(publicKey);
      const result = pollEndpoint(selection, {
        now,
        latestHandshake: report?.latestHandshake,
        deviceEndpoint: report?.endpoint,
      }, this.#timing);
      this.#selections.set(publicKey, result.selection);
      if (result.changed !== undefined) changes.push({ publicKey, endpoint: result.changed });
    }
    for (const change of changes) {
      await setPeerEndpoint(this.#runner, this.#name, change.publicKey, change.endpoint);
    }
    return changes;
  }
}
