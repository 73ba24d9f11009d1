/**
 * Client side of replication: pushes new changes to a few peers at once and runs anti-entropy with a random
 * peer on an interval.
 *
 * @module
 */

import { type Change, SITE_ID_PATTERN } from "./change.ts";
import { StoreError } from "./errors.ts";
import {
  CLUSTER_HEADER,
  type ErrorBody,
  MAX_PUSH_CHANGES,
  MAX_REPLY_BYTES,
  MAX_SITES,
  type PushResponse,
  SYNC_PREFIX,
  type SyncResponse,
  type VectorResponse,
} from "./protocol.ts";
import type { Rejection, Store } from "./store.ts";
import { impossibleClaim, type VersionVector, VersionVectorSchema } from "./vector.ts";
import { REMOVED_DETAIL } from "./removal_notice.ts";
import { readBodyCapped } from "../util/mod.ts";

/** Something the agent did, for logs and tests. */
export type SyncEvent =
  | { type: "apply_start"; peer: string; changes: number }
  | { type: "apply_done"; peer: string; applied: number; rejected: number }
  | { type: "refused"; peer: string; rejected: Rejection[] }
  /** The peer refused this Machine as retired from the Cluster; `details` is its word, to check. */
  | { type: "removed"; peer: string; details: Record<string, unknown> }
  | { type: "push_failed"; peer: string; error: string }
  | { type: "sync_failed"; peer: string; error: string }
  | { type: "round_failed"; error: string }
  | { type: "full_sync"; peer: string; received: number; removed: number }
  | { type: "compacted"; superseded: number; tombstones: number };

/** How a {@linkcode SyncAgent} finds peers and paces itself. */
export interface SyncAgentOptions {
  /** Base URLs of peers (e.g. "http://10.210.0.2:51000"), asked again each round. */
  peers: () => string[] | Promise<string[]>;
  /** Peers each new change is pushed to. Defaults to 3. */
  fanout?: number;
  /** Mean milliseconds between anti-entropy rounds. Defaults to 1000. */
  antiEntropyMs?: number;
  /** Milliseconds new changes wait to be pushed together. Defaults to 5. */
  pushDelayMs?: number;
  /** Milliseconds before a request to a peer is abandoned. Defaults to 10000. */
  timeoutMs?: number;
  /** Changes per anti-entropy page. Defaults to 5000. */
  pageLimit?: number;
  /**
   * How old a superseded change or a tombstone must be before compaction removes it. Defaults to
   * {@linkcode COMPACTION_HORIZON_MS} (7 days). A Machine cut off longer than this rejoins by a full sync.
   */
  horizonMs?: number;
  /** Milliseconds between compactions. Defaults to one hour. */
  compactEveryMs?: number;
  /** Told about applies and failures. */
  onEvent?: (event: SyncEvent) => void;
}

/** The default compaction horizon: 7 days. */
export const COMPACTION_HORIZON_MS = 7 * 24 * 60 * 60 * 1000;

/** Most pages one full sync takes before giving up (it is retried whole on a later round). */
const FULL_SYNC_PAGES = 1000;

// True when a peer's floors say it compacted versions of another Machine this replica never received. This
// Machine's own site is left out: a full copy never adopts it (its own changes come back by the ordinary pull), so
// a floor there, honest (a restored file) or not, would ask for a full copy every round.
function behindFloors(mine: VersionVector, floors: Record<string, number>, self: string): boolean {
  return Object.entries(floors).some(([site, floor]) => site !== self && floor > (mine[site]?.c ?? 0));
}

// Floors from a reply, keeping only well-formed entries: the reply is another Machine's word.
function readFloors(floors: unknown): Record<string, number> {
  const out: Record<string, number> = {};
  if (floors === null || typeof floors !== "object") return out;
  for (const [site, floor] of Object.entries(floors as Record<string, unknown>).slice(0, MAX_SITES)) {
    if (SITE_ID_PATTERN.test(site) && Number.isSafeInteger(floor) && (floor as number) > 0) {
      out[site] = floor as number;
    }
  }
  return out;
}

/** How long a peer whose vector or floors were refused is not asked for a full copy again. */
const DISTRUST_MS = 10 * 60 * 1000;

// What a peer says it holds: its vector and its floors.
interface Claim {
  vector: VersionVector;
  floors: Record<string, number>;
}

/** Outcome of one anti-entropy exchange. */
export interface SyncResult {
  /** Changes new to this replica. */
  received: number;
  /** Changes sent that the peer lacked. */
  sent: number;
  /** Changes either side refused. */
  rejected: Rejection[];
}

/** Traffic counters. */
export interface SyncStats {
  /** HTTP requests made. */
  requests: number;
  /** Request body bytes sent. */
  bytesSent: number;
  /** Response body bytes received. */
  bytesReceived: number;
  /** Changes pushed, counting each peer. */
  changesPushed: number;
}

function sample<T>(items: readonly T[], count: number): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy.slice(0, count);
}

/** Replicates one store with its peers over the `/store/v1` HTTP protocol. */
export class SyncAgent {
  /** Traffic so far. */
  readonly stats: SyncStats = { requests: 0, bytesSent: 0, bytesReceived: 0, changesPushed: 0 };

  readonly #store: Store;
  readonly #options: Required<Omit<SyncAgentOptions, "onEvent">> & Pick<SyncAgentOptions, "onEvent">;
  #compactTimer: ReturnType<typeof setInterval> | undefined;
  readonly #inflight = new Set<Promise<unknown>>();
  #queue: Change[] = [];
  #pushTimer: ReturnType<typeof setTimeout> | undefined;
  #roundTimer: ReturnType<typeof setTimeout> | undefined;
  #unsubscribe: (() => void) | undefined;
  #running = false;
  // Peers whose word about their vector was refused, until when: they are not asked for a full copy meanwhile.
  readonly #distrusted = new Map<string, number>();

  /** Creates a stopped agent for `store`. */
  constructor(store: Store, options: SyncAgentOptions) {
    this.#store = store;
    this.#options = {
      fanout: 3,
      antiEntropyMs: 1000,
      pushDelayMs: 5,
      timeoutMs: 10_000,
      pageLimit: 5000,
      horizonMs: COMPACTION_HORIZON_MS,
      compactEveryMs: 60 * 60 * 1000,
      ...options,
    };
  }

  /** Starts pushing new changes and running anti-entropy. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#unsubscribe = this.#store.onCommit((event) => {
      // Pulled changes are not relayed: the puller asked for them, and anti-entropy spreads them further.
      if (event.pulled === true || event.changes.length === 0) return;
      this.#queue.push(...event.changes);
      this.#schedulePush();
    });
    this.#scheduleRound();
    this.#compactTimer = setInterval(() => this.compact(), this.#options.compactEveryMs);
  }

  /** Compacts the store past the horizon now; reports what went, never throws. */
  compact(): void {
    try {
      const removed = this.#store.compact({ horizonMs: this.#options.horizonMs });
      this.#options.onEvent?.({ type: "compacted", ...removed });
    } catch (error) {
      this.#options.onEvent?.({ type: "round_failed", error: `Compaction failed: ${String(error)}` });
    }
  }

  /** Stops timers and waits for requests in flight. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    clearTimeout(this.#pushTimer);
    clearTimeout(this.#roundTimer);
    clearInterval(this.#compactTimer);
    this.#compactTimer = undefined;
    this.#pushTimer = undefined;
    this.#roundTimer = undefined;
    this.#queue = [];
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight]);
  }

  #track<T>(promise: Promise<T>): Promise<T> {
    this.#inflight.add(promise);
    promise.finally(() => this.#inflight.delete(promise)).catch(() => {});
    return promise;
  }

  #schedulePush(): void {
    if (this.#pushTimer !== undefined || !this.#running) return;
    this.#pushTimer = setTimeout(() => {
      this.#pushTimer = undefined;
      this.#track(this.#flush());
    }, this.#options.pushDelayMs);
  }

  async #flush(): Promise<void> {
    const changes = this.#queue;
    this.#queue = [];
    if (changes.length === 0) return;
    let peers: string[];
    try {
      peers = sample(await this.#options.peers(), this.#options.fanout);
    } catch (error) {
      this.#options.onEvent?.({ type: "round_failed", error: String(error) });
      return;
    }
    let ready: Change[];
    try {
      // Signed once for every peer, and the version mark synced, before anything leaves.
      ready = await this.#store.outbound(changes);
    } catch (error) {
      this.#options.onEvent?.({ type: "round_failed", error: String(error) });
      return;
    }
    await Promise.all(peers.map(async (peer) => {
      try {
        for (let i = 0; i < ready.length; i += MAX_PUSH_CHANGES) {
          await this.push(peer, ready.slice(i, i + MAX_PUSH_CHANGES));
        }
      } catch (error) {
        this.#options.onEvent?.({ type: "push_failed", peer, error: String(error) });
      }
    }));
  }

  #scheduleRound(): void {
    if (!this.#running) return;
    const delay = this.#options.antiEntropyMs * (0.5 + Math.random());
    this.#roundTimer = setTimeout(() => {
      this.#roundTimer = undefined;
      this.#track(this.#round()).finally(() => this.#scheduleRound());
    }, delay);
  }

  // Never rejects: a round that fails for any reason (a peer, a row the peer list cannot use, the store) is
  // reported and the next round is scheduled as usual.
  async #round(): Promise<void> {
    let peer: string | undefined;
    try {
      [peer] = sample(await this.#options.peers(), 1);
    } catch (error) {
      this.#options.onEvent?.({ type: "round_failed", error: String(error) });
      return;
    }
    if (peer === undefined) return;
    try {
      await this.syncOnce(peer);
    } catch (error) {
      this.#options.onEvent?.({ type: "sync_failed", peer, error: String(error) });
    }
  }

  async #request<T>(peer: string, path: string, body?: unknown): Promise<T> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.#options.timeoutMs);
    const text = body === undefined ? undefined : JSON.stringify(body);
    this.stats.requests += 1;
    this.stats.bytesSent += text?.length ?? 0;
    try {
      const response = await fetch(`${peer}${SYNC_PREFIX}${path}`, {
        method: text === undefined ? "GET" : "POST",
        headers: { [CLUSTER_HEADER]: this.#store.clusterId, "content-type": "application/json" },
        body: text,
        signal: controller.signal,
      });
      const bytes = await readBodyCapped(response, MAX_REPLY_BYTES);
      const reply = bytes === undefined ? undefined : new TextDecoder().decode(bytes);
      if (reply === undefined) {
        throw new StoreError(
          "unavailable",
          `Peer "${peer}" answered ${path} with more than ${MAX_REPLY_BYTES} bytes`,
        );
      }
      this.stats.bytesReceived += reply.length;
      if (!response.ok) {
        let error: ErrorBody = { code: "unavailable", message: reply.slice(0, 200) };
        try {
          error = JSON.parse(reply) as ErrorBody;
        } catch {
          // Not one of our replies; keep the raw text.
        }
        const details = error.details;
        if (details !== null && typeof details === "object" && REMOVED_DETAIL in details) {
          this.#options.onEvent?.({ type: "removed", peer, details });
        }
        throw new StoreError(
          error.code === "conflict" || error.code === "unauthenticated" ? error.code : "unavailable",
          `Peer "${peer}" refused ${path}: ${error.message}`,
        );
      }
      const cluster = response.headers.get(CLUSTER_HEADER);
      if (cluster !== this.#store.clusterId) {
        throw new StoreError("conflict", `Refused peer "${peer}": it belongs to another Cluster`);
      }
      return JSON.parse(reply) as T;
    } catch (error) {
      if (error instanceof StoreError) throw error;
      throw new StoreError("unavailable", `Cannot reach peer "${peer}" for ${path}: ${String(error)}`, {
        cause: error,
      });
    } finally {
      clearTimeout(timer);
    }
  }

  /** Pushes changes to one peer and returns its verdict. */
  async push(peer: string, changes: Change[]): Promise<PushResponse> {
    const signed = await this.#store.outbound(changes);
    this.stats.changesPushed += changes.length;
    return this.#request<PushResponse>(peer, "/push", { site: this.#store.siteId, changes: signed });
  }

  /** The peer's version vector, e.g. for a joiner to wait on with `Store.caughtUpWith`. */
  async peerVector(peer: string): Promise<VersionVector> {
    return this.#readClaim(peer, await this.#request<VectorResponse>(peer, "/vector")).vector;
  }

  /** One page of the changes the peer holds beyond `vector`; a reply without a changes list is refused. */
  async #pull(peer: string, vector: VersionVector): Promise<SyncResponse> {
    const reply = await this.#request<SyncResponse>(peer, "/sync", {
      site: this.#store.siteId,
      vector,
      limit: this.#options.pageLimit,
    });
    if (!Array.isArray(reply.changes)) {
      throw new StoreError("unavailable", `Peer "${peer}" sent no changes list`);
    }
    return reply;
  }

  // The vector and floors a reply claims, refused (counted, and the peer not asked for a full copy for a while)
  // when malformed, oversized or impossible on their face.
  #readClaim(peer: string, reply: { vector?: unknown; floors?: unknown }): Claim {
    const vector = VersionVectorSchema.safeParse(reply?.vector);
    if (!vector.success) {
      const issue = vector.error.issues[0];
      throw this.#refuseClaim(
        peer,
        `its version vector is malformed: ${issue.path.join(".").slice(0, 80) || "vector"}: ${issue.message}`,
      );
    }
    const floors = readFloors(reply.floors);
    const impossible = impossibleClaim(vector.data, floors);
    if (impossible !== undefined) throw this.#refuseClaim(peer, impossible);
    return { vector: vector.data, floors };
  }

  #refuseClaim(peer: string, reason: string): StoreError {
    if (this.#distrusted.size >= 1024) this.#distrusted.clear();
    this.#distrusted.set(peer, Date.now() + DISTRUST_MS);
    const message = `Refused what peer "${peer}" says it holds: ${reason}`;
    this.#options.onEvent?.({ type: "refused", peer, rejected: [{ index: -1, reason: message }] });
    return new StoreError("conflict", message);
  }

  #distrusts(peer: string): boolean {
    const until = this.#distrusted.get(peer);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.#distrusted.delete(peer);
    return false;
  }

  /**
   * Takes a whole copy of the peer's log (every change it holds, verified and merged as usual, page by page),
   * then lets the store drop what the peer deleted and compacted meanwhile and adopt its watermarks. Run when the
   * peer's floors show this replica was cut off longer than the compaction horizon. What the peer says it holds
   * is checked against what arrived (see `Store.completeFullSync`); a lie is refused and counted as a `refused`
   * event, and nothing but the verified changes is kept.
   */
  async fullSync(peer: string): Promise<SyncResult> {
    const result: SyncResult = { received: 0, sent: 0, rejected: [] };
    // What this pull has received so far, as a vector: the peer sends each site's versions in ascending order,
    // admissions first, so a site's watermark is the last non-admission version it sent.
    const cursor: VersionVector = {};
    const seen = new Set<string>();
    let start: Claim | undefined;
    for (let page = 0; page < FULL_SYNC_PAGES; page++) {
      const reply = await this.#pull(peer, cursor);
      start ??= this.#readClaim(peer, reply);
      for (const change of reply.changes as unknown[]) {
        const c = change as Partial<Change> | null;
        if (typeof c?.site !== "string" || !Number.isSafeInteger(c.version)) continue;
        seen.add(`${c.table}\0${c.key}`);
        const held = cursor[c.site] ??= { c: 0 };
        if (c.table === "members") (held.r ??= []).push([c.version!, c.version!]);
        else held.c = Math.max(held.c, c.version!);
      }
      const applied = await this.#store.receive(reply.changes, { pulled: true });
      if (applied.rejected.length > 0) {
        this.#options.onEvent?.({ type: "refused", peer, rejected: applied.rejected });
      }
      result.received += applied.applied;
      result.rejected.push(...applied.rejected);
      if (!reply.more) {
        let removed: number;
        try {
          removed = this.#store.completeFullSync(start, seen, { horizonMs: this.#options.horizonMs });
        } catch (error) {
          if (error instanceof StoreError && error.code === "conflict") {
            throw this.#refuseClaim(peer, error.message.replace(/^Refused the peer's full copy: /, ""));
          }
          throw error;
        }
        this.#options.onEvent?.({ type: "full_sync", peer, received: result.received, removed });
        return result;
      }
      if (reply.changes.length === 0) break;
    }
    throw new StoreError("unavailable", `Full sync from peer "${peer}" did not finish; it is retried later`);
  }

  /** One anti-entropy exchange: pull what this replica lacks, then push what the peer lacks. */
  async syncOnce(peer: string): Promise<SyncResult> {
    const result: SyncResult = { received: 0, sent: 0, rejected: [] };
    let theirs: VersionVector | undefined;
    for (let page = 0; page < 100; page++) {
      const mine = this.#store.vector();
      const reply = await this.#pull(peer, mine);
      const claim = this.#readClaim(peer, reply);
      // The peer compacted changes this replica never received: only a whole copy brings it level. A peer whose
      // word was refused lately is not asked for one; another peer will be.
      if (page === 0 && behindFloors(mine, claim.floors, this.#store.siteId) && !this.#distrusts(peer)) {
        return await this.fullSync(peer);
      }
      theirs = claim.vector;
      if (reply.changes.length === 0) break;
      this.#options.onEvent?.({ type: "apply_start", peer, changes: reply.changes.length });
      const applied = await this.#store.receive(reply.changes, { pulled: true });
      this.#options.onEvent?.({
        type: "apply_done",
        peer,
        applied: applied.applied,
        rejected: applied.rejected.length,
      });
      if (applied.rejected.length > 0) {
        this.#options.onEvent?.({ type: "refused", peer, rejected: applied.rejected });
      }
      result.received += applied.applied;
      result.rejected.push(...applied.rejected);
      // A page that brought nothing new (all refused or duplicate) would come back the same.
      if (!reply.more || applied.applied === 0) break;
    }
    for (let page = 0; page < 100 && theirs !== undefined; page++) {
      const missing = this.#store.changesMissingFrom(theirs, this.#options.pageLimit);
      if (missing.changes.length === 0) break;
      const pushed = await this.push(peer, missing.changes);
      result.sent += pushed.applied;
      result.rejected.push(...pushed.rejected);
      if (!missing.more || pushed.applied === 0) break;
      theirs = await this.peerVector(peer);
    }
    return result;
  }
}
