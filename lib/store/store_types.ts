/**
 * What the store takes and gives back: how to open it, what a batch of received changes did, the commit events
 * and change pages it hands to sync.
 *
 * @module
 */

import type { Change } from "./change.ts";

/** How to open a store. */
export interface StoreOptions {
  /** SQLite file, or ":memory:". */
  path: string;
  /** This Machine's id; every local change carries it. */
  siteId: string;
  /** The Cluster this store belongs to; a file from another Cluster is refused. */
  clusterId: string;
  /** How long a writer waits on a locked database. Defaults to 5000. */
  busyTimeoutMs?: number;
  /** Wall clock in milliseconds, for simulations. Defaults to `Date.now`. */
  now?: () => number;
  /**
   * This Machine's Ed25519 secret (32 bytes). With it the store is authenticated: its changes are signed before
   * they leave, and a remote change is merged (and so relayed) only when signed by its site's admitted key. The
   * daemon always passes one; without it (simulations, benchmarks) signatures are neither made nor checked.
   */
  signingSecret?: Uint8Array;
}

/** What one {@linkcode Store.compact} removed. */
export interface CompactResult {
  /** Changes a newer change of the same row had superseded. */
  superseded: number;
  /** Tombstones removed with their rows. */
  tombstones: number;
}

/** Why one change of a batch was refused. */
export interface Rejection {
  /** Position in the batch; -1 when what was refused is the reply itself (a peer's claim of what it holds). */
  index: number;
  /** Site the change claims, when readable. */
  site?: string;
  /** Version the change claims, when readable. */
  version?: number;
  /** Why it was refused. */
  reason: string;
}

/** Outcome of applying a batch of remote changes. */
export interface ApplyResult {
  /** Changes new to this replica. */
  applied: number;
  /** Changes already held. */
  duplicates: number;
  /** Changes refused. */
  rejected: Rejection[];
}

/** Told after every commit that changed the store. */
export interface CommitEvent {
  /** Local sequence number after the commit. */
  seq: number;
  /** Changes new to this replica, in commit order. */
  /** Changes, in per-site version order. */
  changes: Change[];
  /** Whether the changes were written here or arrived from a peer. */
  origin: "local" | "remote";
  /** True when this Machine pulled them itself (anti-entropy): they are not relayed. */
  pulled?: boolean;
}

/** A changed key since some local sequence number; tombstones included. */
export interface ChangedKey {
  /** Row key. */
  key: string;
  /** True when the row is now a tombstone. */
  deleted: boolean;
}

/** Keys changed since a local sequence number, per table. */
export interface StoreChanges {
  /** Pass this to the next call to see only later changes. */
  seq: number;
  /** Changed keys per table name. */
  tables: Record<string, ChangedKey[]>;
}

/** A page of changes another replica lacks. */
export interface ChangePage {
  /** Changes, in per-site version order. */
  changes: Change[];
  /** True when more remain beyond this page. */
  more: boolean;
}
