/**
 * The replicated Cluster store on one Machine: tables materialised from a change log, in one SQLite file. The
 * parts live beside it: the schema (`store_schema.ts`), writes and merges (`store_apply.ts`), reads
 * (`store_queries.ts`) and compaction with full sync (`store_compaction.ts`), sharing one `StoreCore`.
 *
 * @module
 */

import type { DatabaseSync } from "node:sqlite";
import { type Change, SITE_ID_PATTERN } from "./change.ts";
import { StoreError } from "./errors.ts";
import type {
  Ack,
  AcmeChallenge,
  Certificate,
  CertificateErrorRow,
  ClusterSetting,
  Container,
  Machine,
  Member,
  Removal,
  RetiredMachine,
  ServingPointer,
  Volume,
} from "./schemas.ts";
import { SIGNING_KEY_PATTERN } from "./signing.ts";
import { commitRemote, outbound, screen, writeLocal } from "./store_apply.ts";
import { checkpoint, compact, completeFullSync, floors } from "./store_compaction.ts";
import { StoreCore } from "./store_core.ts";
import {
  caughtUpWith,
  changesMissingFrom,
  changesSince,
  dump,
  listBodies,
  rowChange,
  vector,
} from "./store_queries.ts";
import { initSchema, openDatabase } from "./store_schema.ts";
import type {
  ApplyResult,
  ChangePage,
  CommitEvent,
  CompactResult,
  StoreChanges,
  StoreOptions,
} from "./store_types.ts";
import { TABLES, type TableSpec } from "./tables.ts";
import { Table } from "./table.ts";
import type { VersionVector } from "./vector.ts";

export type {
  ApplyResult,
  ChangedKey,
  ChangePage,
  CommitEvent,
  CompactResult,
  Rejection,
  StoreChanges,
  StoreOptions,
} from "./store_types.ts";
export { Table } from "./table.ts";

/** One Machine's copy of the Cluster store. Open with {@linkcode openStore}. */
export class Store {
  /** This Machine's id. */
  readonly siteId: string;
  /** The Cluster this copy belongs to. */
  readonly clusterId: string;
  /** Cluster settings (name-keyed). */
  readonly cluster: Table<ClusterSetting>;
  /** Machine records (entity-keyed, owner is the Machine). */
  readonly machines: Table<Machine>;
  /** Containers (entity-keyed, owner is `machine_id`). */
  readonly containers: Table<Container>;
  /** Volumes (entity-keyed, owner is `machine_id`). */
  readonly volumes: Table<Volume>;
  /** Certificates (name-keyed). */
  readonly certificates: Table<Certificate>;
  /** Serving Pointers (name-keyed by "project/service"). */
  readonly servingPointers: Table<ServingPointer>;
  /** Acks of Serving Pointers (entity-keyed by "machine_id/project/service"). */
  readonly acks: Table<Ack>;
  /** Admitted signing keys (name-keyed by Machine id). */
  readonly members: Table<Member>;
  /** Removal marks (name-keyed by "project/service", `*` for a whole Project). */
  readonly removals: Table<Removal>;
  /** ACME HTTP-01 challenge answers (name-keyed by token). */
  readonly acmeChallenges: Table<AcmeChallenge>;
  /** The last failure per hostname to obtain or renew its certificate (name-keyed by hostname). */
  readonly certificateErrors: Table<CertificateErrorRow>;
  /** Machines removed while gone (name-keyed by Machine id); readers leave their rows out. */
  readonly retiredMachines: Table<RetiredMachine>;

  readonly #core: StoreCore;

  /** Use {@linkcode openStore}. */
  constructor(db: DatabaseSync, options: StoreOptions) {
    this.#core = new StoreCore(db, options);
    this.siteId = options.siteId;
    this.clusterId = options.clusterId;
    this.cluster = new Table(this, TABLES.cluster);
    this.machines = new Table(this, TABLES.machines);
    this.containers = new Table(this, TABLES.containers);
    this.volumes = new Table(this, TABLES.volumes);
    this.certificates = new Table(this, TABLES.certificates);
    this.servingPointers = new Table(this, TABLES.serving_pointers);
    this.acks = new Table(this, TABLES.acks);
    this.members = new Table(this, TABLES.members);
    this.removals = new Table(this, TABLES.removals);
    this.acmeChallenges = new Table(this, TABLES.acme_challenges);
    this.certificateErrors = new Table(this, TABLES.certificate_errors);
    this.retiredMachines = new Table(this, TABLES.retired_machines);
    initSchema(this.#core);
  }

  /** The current local sequence number; it grows with every commit that changes a row. */
  get seq(): number {
    return this.#core.seq;
  }

  /** True once {@linkcode Store.close} ran. */
  get closed(): boolean {
    return this.#core.closed;
  }

  /** Closes the database and ends every watch. */
  close(): void {
    const core = this.#core;
    if (core.closed) return;
    core.closed = true;
    for (const listener of [...core.listeners]) listener({ seq: core.seq, changes: [], origin: "local" });
    core.listeners.clear();
    core.db.close();
  }

  /** Closes it when a `using` scope ends. */
  [Symbol.dispose](): void {
    this.close();
  }

  /** True when this store signs its changes and verifies everyone else's. */
  get authenticated(): boolean {
    return this.#core.signer !== undefined;
  }

  /** This Machine's signing public key (base64), when the store is authenticated. */
  get signingKey(): string | undefined {
    return this.#core.signer?.publicKey;
  }

  /** Ids of the Machines retired while gone: every reader leaves their rows out of its view. */
  retiredIds(): Set<string> {
    return new Set(this.retiredMachines.list().map((r) => r.machine_id));
  }

  /** Machine rows, without retired Machines. */
  liveMachines(): Machine[] {
    const retired = this.retiredIds();
    return this.machines.list().filter((m) => !retired.has(m.id));
  }

  /** Container rows (optionally filtered as {@link Table.list}), without those of retired Machines. */
  liveContainers(filter: Partial<Record<string, string>> = {}): Container[] {
    const retired = this.retiredIds();
    return this.containers.list(filter).filter((c) => !retired.has(c.machine_id));
  }

  /** The key a site's changes must be signed with: its own, an anchor the join brought, or its admission. */
  trustedKey(site: string): string | undefined {
    return this.#core.trustedKey(site);
  }

  /**
   * Trusts the given Machines' keys without an admission in the store: a joiner's starting point, handed over by
   * the join the operator ran (the Entry Machine's view of the members). Kept in this file only, not replicated.
   */
  addAnchors(members: readonly { id: string; signingKey: string }[]): void {
    this.#core.assertOpen();
    const next = { ...this.#core.anchors };
    for (const m of members) {
      if (!SITE_ID_PATTERN.test(m.id) || !SIGNING_KEY_PATTERN.test(m.signingKey)) {
        throw new StoreError(
          "invalid_argument",
          `Invalid member "${m.id.slice(0, 64)}": bad id or signing key`,
        );
      }
      next[m.id] = m.signingKey;
    }
    this.#core.db.prepare(`INSERT INTO meta (name, value) VALUES ('anchors', ?)
      ON CONFLICT (name) DO UPDATE SET value = excluded.value`).run(JSON.stringify(next));
    this.#core.anchors = next;
  }

  /**
   * Admits a Machine: records its signing key, signed by this Machine, so every member accepts its changes. A
   * Machine's key never changes: admitting an id again with another key is refused.
   */
  admit(machineId: string, signingKey: string): Change | undefined {
    if (!SIGNING_KEY_PATTERN.test(signingKey)) {
      throw new StoreError(
        "invalid_argument",
        `Invalid signing key for Machine "${machineId}": expected base64 of 32 bytes`,
      );
    }
    const known = this.trustedKey(machineId);
    if (known === signingKey && this.members.get(machineId) !== undefined) return undefined;
    if (known !== undefined && known !== signingKey) {
      throw new StoreError(
        "conflict",
        `Cannot admit Machine "${machineId}": it is admitted with another signing key`,
      );
    }
    return this.members.put({
      "machine_id": machineId,
      "signing_key": signingKey,
      "admitted_by": this.siteId,
    });
  }
  /**
   * Prepares changes to leave this Machine: signs this Machine's own changes not signed yet (keeping the
   * signatures in the log) and makes the version high-water mark durable past them, so a crash that loses the
   * log's tail can never make this Machine reuse a version a peer already holds. Call before sending.
   */
  outbound(changes: readonly Change[]): Promise<Change[]> {
    return outbound(this.#core, changes);
  }

  /** Calls `listener` after every commit that brought new changes. Returns the unsubscribe function. */
  onCommit(listener: (event: CommitEvent) => void): () => void {
    this.#core.listeners.add(listener);
    return () => this.#core.listeners.delete(listener);
  }

  /** @internal Reads a live body's JSON text. */
  readBody(table: string, key: string): string | undefined {
    return this.#core.readBody(table, key);
  }

  /**
   * The change that wrote a live row as this replica holds it, as it travels (signed once it has left its
   * writer); `undefined` for no row or a tombstone. Read the table first (its `Table` creates it).
   */
  rowChange(table: string, key: string): Change | undefined {
    return rowChange(this.#core, table, key);
  }

  /** @internal Lists live bodies' JSON text, filtered on top-level fields. */
  listBodies(table: string, where: Partial<Record<string, string>>): string[] {
    return listBodies(this.#core, table, where);
  }

  /** @internal Writes one local change: the body, or a tombstone when `body` is null. */
  writeLocal(spec: TableSpec, key: string, body: Record<string, unknown> | null): Change {
    return writeLocal(this.#core, spec, key, body);
  }

  /**
   * Applies remote changes in one transaction. Re-applying a change is a no-op; a malformed or refused change
   * is listed in `rejected` and the rest still apply. An authenticated store verifies each signature here, once.
   */
  applyChanges(inputs: readonly unknown[]): ApplyResult {
    const { result, valid } = screen(this.#core, inputs);
    return commitRemote(this.#core, result, valid, false);
  }

  /**
   * {@linkcode Store.applyChanges} for the sync protocol. Verification is synchronous and the batch commits in the
   * same turn, so a change arriving twice at once (a push and a relay) is verified once and found a duplicate the
   * second time.
   */
  receive(inputs: readonly unknown[], options: { pulled?: boolean } = {}): Promise<ApplyResult> {
    try {
      const { result, valid } = screen(this.#core, inputs);
      return Promise.resolve(commitRemote(this.#core, result, valid, options.pulled === true));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** What this replica holds, per site. */
  vector(): VersionVector {
    return vector(this.#core);
  }

  /** Changes this replica holds that a replica with `theirs` lacks, up to `limit` changes or about `maxChars`. */
  changesMissingFrom(theirs: VersionVector, limit = 5000, maxChars = 8 * 1024 * 1024): ChangePage {
    return changesMissingFrom(this.#core, theirs, limit, maxChars);
  }

  /** True when this replica holds every change `theirs` holds, e.g. a peer's vector a joiner waits for. */
  caughtUpWith(theirs: VersionVector): boolean {
    return caughtUpWith(this.#core, theirs);
  }

  /**
   * Removes from the log what no replica needs any more: changes older than `horizonMs` that a newer change
   * superseded, and tombstones older than it (with their rows, for entity tables). Only versions below a site's
   * contiguous watermark
   * go, and each site's floor rises past them, so a peer whose vector is below a floor (it was cut off longer
   * than the horizon) knows it must take a full copy ({@linkcode Store.completeFullSync}). Admissions and tables
   * this release does not know are kept whole.
   */
  compact(options: { horizonMs: number }): CompactResult {
    return compact(this.#core, options);
  }

  /** Folds the write-ahead log into the main file and truncates it. */
  checkpoint(): void {
    checkpoint(this.#core);
  }

  /** Each site's floor above 0: versions up to it missing from the log were compacted (or never needed). */
  floors(): Record<string, number> {
    return floors(this.#core);
  }

  /**
   * Ends a full sync: the caller pulled every change a peer held (applied as usual) and passes what the peer
   * said at the start — its vector and floors — and the `table\0key` of every change it sent.
   * A row here that the peer's vector covers but the peer sent nothing for was deleted there and its tombstone
   * compacted: it becomes a tombstone here too, its changes leave the log. Then this replica holds what the peer
   * held, so it adopts the peer's watermarks and floors. Returns how many rows it deleted.
   *
   * The peer's word is checked against what arrived before anything is adopted, so a peer that lies about what it
   * holds can neither make this replica skip versions nor delete a row newer than the horizon: every version the peer claims above its
   * floor must be held here now; a row is buried only when all its covered changes lie at or below the floors; a
   * floor must be followed by a change its site signed (compaction keeps each site's latest) and must not cover
   * a change newer than the compaction horizon (`horizonMs`, the Cluster's, default 7 days:
   * compaction takes nothing newer, on a clock at most {@linkcode MAX_CLOCK_SKEW_MS} ahead); every Machine it names
   * must be admitted here; and a floor must lie under the peer's own watermark. A claim failing any of these is
   * refused whole with `conflict` and nothing changes; the changes pulled stay, each verified alone.
   */
  completeFullSync(
    peer: { vector: VersionVector; floors: Record<string, number> },
    seen: ReadonlySet<string>,
    options: { horizonMs?: number } = {},
  ): number {
    return completeFullSync(this.#core, peer, seen, options);
  }

  /** Keys changed after local sequence number `seq`, per table, without reading whole tables. */
  changesSince(seq: number): StoreChanges {
    return changesSince(this.#core, seq);
  }

  /**
   * Yields what changed after `since` (default: now), woken by each commit, until `signal` aborts or the store
   * closes.
   */
  async *watch(options: { since?: number; signal?: AbortSignal } = {}): AsyncGenerator<StoreChanges> {
    let since = options.since ?? this.#core.seq;
    const signal = options.signal;
    while (!this.#core.closed && !signal?.aborted) {
      if (this.#core.seq > since) {
        const changes = this.changesSince(since);
        since = changes.seq;
        if (Object.keys(changes.tables).length > 0) yield changes;
        continue;
      }
      await new Promise<void>((resolve) => {
        const done = (): void => {
          unsubscribe();
          signal?.removeEventListener("abort", done);
          resolve();
        };
        const unsubscribe = this.onCommit(done);
        signal?.addEventListener("abort", done);
      });
    }
  }

  /** A canonical text of every table and the version vector; equal on replicas that converged. */
  dump(): string {
    return dump(this.#core);
  }

  /** Runs SQLite's integrity check; "ok" when the file is sound. */
  integrityCheck(): string {
    this.#core.assertOpen();
    return String(this.#core.db.prepare(`PRAGMA integrity_check`).get()?.integrity_check);
  }
}

/** Opens (or creates) a store file: WAL, synchronous=NORMAL, an explicit busy timeout. */
export function openStore(options: StoreOptions): Store {
  return new Store(openDatabase(options), options);
}
