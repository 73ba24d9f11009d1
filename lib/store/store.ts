/**
 * The replicated Cluster store on one Machine: tables materialised from a change log, in one SQLite file.
 *
 * @module
 */

import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
import { type Change, checkChange, MAX_BODY_CHARS, parseBodyText, SITE_ID_PATTERN } from "./change.ts";
import { StoreError } from "./errors.ts";
import { encodeHlc, HybridClock, MAX_CLOCK_SKEW_MS } from "./hlc.ts";
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
import { changeMessage, ChangeSigner, SignatureVerifier, SIGNING_KEY_PATTERN } from "./signing.ts";
import { TABLES, type TableSpec } from "./tables.ts";
import { writeFileAtomic } from "../util/mod.ts";
import { holds, impossibleClaim, type SiteVersions, type VersionVector } from "./vector.ts";
import {
  type ChangeRow,
  FIELD_PATTERN,
  filterColumn,
  filterValue,
  parseStoredBody,
  rejection,
  ROW_COLUMNS,
  type RowWriters,
  type Screened,
  toChange,
} from "./change_rows.ts";
import type {
  ApplyResult,
  ChangedKey,
  ChangePage,
  CommitEvent,
  CompactResult,
  StoreChanges,
  StoreOptions,
} from "./store_types.ts";
import { Table } from "./table.ts";

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

  readonly #db: DatabaseSync;
  readonly #clock: HybridClock;
  readonly #statements = new Map<string, StatementSync>();
  readonly #writers = new Map<string, RowWriters>();
  readonly #listeners = new Set<(event: CommitEvent) => void>();
  readonly #signer: ChangeSigner | undefined;
  readonly #verifier = new SignatureVerifier();
  // Admitted keys read from `members`: a Machine's key never changes and admissions are never withdrawn.
  readonly #admittedKeys = new Map<string, string>();
  readonly #hwmPath: string | undefined;
  readonly #now: () => number;
  #anchors: Record<string, string> = {};
  #durableVersion = 0;
  #hwmTarget = 0;
  #hwmWrites: Promise<void> = Promise.resolve();
  #ownVersion = 0;
  #ownContiguous = 0;
  #seq = 0;
  #closed = false;

  /** Use {@linkcode openStore}. */
  constructor(db: DatabaseSync, options: StoreOptions) {
    this.#db = db;
    this.siteId = options.siteId;
    this.clusterId = options.clusterId;
    this.#now = options.now ?? Date.now;
    this.#clock = new HybridClock(options.now);
    this.#signer = options.signingSecret === undefined ? undefined : new ChangeSigner(options.signingSecret);
    this.#hwmPath = options.path === ":memory:" || options.path === ""
      ? undefined
      : `${options.path}.version`;
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
    this.#init();
  }

  /** The current local sequence number; it grows with every commit that changes a row. */
  get seq(): number {
    return this.#seq;
  }

  /** True once {@linkcode Store.close} ran. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Closes the database and ends every watch. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const listener of [...this.#listeners]) listener({ seq: this.#seq, changes: [], origin: "local" });
    this.#listeners.clear();
    this.#db.close();
  }

  #init(): void {
    const db = this.#db;
    db.exec(`CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)`);
    db.exec(`CREATE TABLE IF NOT EXISTS changes (
      site TEXT NOT NULL, version INTEGER NOT NULL, tbl TEXT NOT NULL, key TEXT NOT NULL,
      hlc TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '', deleted INTEGER NOT NULL DEFAULT 0, body TEXT,
      PRIMARY KEY (site, version)) WITHOUT ROWID`);
    db.exec(`CREATE TABLE IF NOT EXISTS sites (
      site TEXT PRIMARY KEY NOT NULL, contiguous INTEGER NOT NULL DEFAULT 0, max INTEGER NOT NULL DEFAULT 0)`);
    if (!db.prepare(`PRAGMA table_info(changes)`).all().some((c) => c.name === "sig")) {
      db.exec(`ALTER TABLE changes ADD COLUMN sig TEXT`);
    }
    // `floor`: every version of the site up to it that is not in the log was compacted (see compact).
    if (!db.prepare(`PRAGMA table_info(sites)`).all().some((c) => c.name === "floor")) {
      db.exec(`ALTER TABLE sites ADD COLUMN floor INTEGER NOT NULL DEFAULT 0`);
    }
    this.#checkIdentity("cluster_id", this.clusterId);
    this.#checkIdentity("site_id", this.siteId);
    this.#anchors = this.#readAnchors();
    db.exec("BEGIN IMMEDIATE");
    try {
      for (const spec of Object.values(TABLES)) this.#ensureTable(spec);
      db.exec("COMMIT");
    } catch (error) {
      db.exec("ROLLBACK");
      throw error;
    }
    // The own site's entry in `sites` is refreshed here, not on each local write: the log is the truth.
    const own = db.prepare(`SELECT max(version) AS v FROM changes WHERE site = ?`).get(this.siteId);
    // Compaction may have removed this Machine's latest changes from the log; `sites` still counts them.
    const counted = db.prepare(`SELECT max AS v FROM sites WHERE site = ?`).get(this.siteId);
    // A version that left this Machine is never reused, even when a crash lost it from the log: the high-water
    // mark was made durable before it left (see outbound), and numbering resumes above it.
    this.#durableVersion = this.#readHighWater();
    this.#ownVersion = Math.max(Number(own?.v ?? 0), Number(counted?.v ?? 0), this.#durableVersion);
    if (this.#ownVersion > 0) this.#advance(this.siteId, this.#ownVersion);
    const last = db.prepare(`SELECT max(hlc) AS h FROM changes`).get();
    if (typeof last?.h === "string") this.#clock.observe(last.h);
    for (const spec of Object.values(TABLES)) {
      const row = db.prepare(`SELECT max(seq) AS s FROM ${spec.name}`).get();
      this.#seq = Math.max(this.#seq, Number(row?.s ?? 0));
    }
  }

  /** True when this store signs its changes and verifies everyone else's. */
  get authenticated(): boolean {
    return this.#signer !== undefined;
  }

  /** This Machine's signing public key (base64), when the store is authenticated. */
  get signingKey(): string | undefined {
    return this.#signer?.publicKey;
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
    if (site === this.siteId && this.#signer !== undefined) return this.#signer.publicKey;
    const anchor = this.#anchors[site];
    if (anchor !== undefined) return anchor;
    const cached = this.#admittedKeys.get(site);
    if (cached !== undefined) return cached;
    const text = this.#closed ? undefined : this.readBody("members", site);
    if (text === undefined) return undefined;
    const member = parseBodyText(text);
    const key = typeof member === "string" ? undefined : member.signing_key;
    if (typeof key !== "string" || !SIGNING_KEY_PATTERN.test(key)) return undefined;
    if (this.#admittedKeys.size >= 4096) this.#admittedKeys.clear();
    this.#admittedKeys.set(site, key);
    return key;
  }

  /**
   * Trusts the given Machines' keys without an admission in the store: a joiner's starting point, handed over by
   * the join the operator ran (the Entry Machine's view of the members). Kept in this file only, not replicated.
   */
  addAnchors(members: readonly { id: string; signingKey: string }[]): void {
    this.#assertOpen();
    const next = { ...this.#anchors };
    for (const m of members) {
      if (!SITE_ID_PATTERN.test(m.id) || !SIGNING_KEY_PATTERN.test(m.signingKey)) {
        throw new StoreError(
          "invalid_argument",
          `Invalid member "${m.id.slice(0, 64)}": bad id or signing key`,
        );
      }
      next[m.id] = m.signingKey;
    }
    this.#db.prepare(`INSERT INTO meta (name, value) VALUES ('anchors', ?)
      ON CONFLICT (name) DO UPDATE SET value = excluded.value`).run(JSON.stringify(next));
    this.#anchors = next;
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

  #readAnchors(): Record<string, string> {
    const row = this.#db.prepare(`SELECT value FROM meta WHERE name = 'anchors'`).get();
    if (row === undefined) return {};
    try {
      const value = JSON.parse(String(row.value)) as Record<string, unknown>;
      return Object.fromEntries(
        Object.entries(value).filter(([, v]) => typeof v === "string" && SIGNING_KEY_PATTERN.test(v)),
      ) as Record<string, string>;
    } catch {
      return {};
    }
  }

  #readHighWater(): number {
    if (this.#hwmPath === undefined) return 0;
    let text: string;
    try {
      text = Deno.readTextFileSync(this.#hwmPath);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return 0;
      throw new StoreError("unavailable", `Cannot read "${this.#hwmPath}": ${String(error)}`, {
        cause: error,
      });
    }
    const match = /^(\d{1,15})\n?$/.exec(text);
    if (match === null) {
      throw new StoreError("unavailable", `Cannot read "${this.#hwmPath}": expected a version number`);
    }
    return Number(match[1]);
  }

  // One write at a time, each of the highest version asked for so far, so a slower write of a lower mark can
  // never land after a higher one.
  async #ensureDurable(version: number): Promise<void> {
    if (version <= this.#durableVersion || this.#hwmPath === undefined) return;
    const path = this.#hwmPath;
    this.#hwmTarget = Math.max(this.#hwmTarget, version);
    const run = this.#hwmWrites.then(async () => {
      const target = this.#hwmTarget;
      if (target <= this.#durableVersion) return;
      await writeFileAtomic(path, `${target}\n`, { mode: 0o600 });
      this.#durableVersion = target;
    });
    this.#hwmWrites = run.catch(() => {});
    try {
      await run;
    } catch (error) {
      throw new StoreError("unavailable", `Cannot record the version high-water mark: ${String(error)}`, {
        cause: error,
      });
    }
  }

  /**
   * Prepares changes to leave this Machine: signs this Machine's own changes not signed yet (keeping the
   * signatures in the log) and makes the version high-water mark durable past them, so a crash that loses the
   * log's tail can never make this Machine reuse a version a peer already holds. Call before sending.
   */
  async outbound(changes: readonly Change[]): Promise<Change[]> {
    this.#assertOpen();
    let highest = 0;
    const signer = this.#signer;
    const signed: Change[] = [];
    // Signed concurrently, and the version mark synced meanwhile: both before anything leaves.
    const ready = changes.map(async (change): Promise<Change> => {
      if (change.site !== this.siteId) return change;
      highest = Math.max(highest, change.version);
      if (signer === undefined || change.sig !== undefined) return change;
      const copy = { ...change, sig: await signer.sign(changeMessage(this.clusterId, change)) };
      signed.push(copy);
      return copy;
    });
    const [out] = await Promise.all([
      Promise.all(ready),
      Promise.resolve().then(() => this.#ensureDurable(highest)),
    ]);
    if (this.#closed) throw new StoreError("unavailable", `Store is closed: site "${this.siteId}"`);
    if (signed.length > 0) {
      this.#transaction(() => {
        const update = this.#statement(
          `UPDATE changes SET sig = ? WHERE site = ? AND version = ? AND sig IS NULL`,
        );
        for (const c of signed) update.run(c.sig!, c.site, c.version);
      });
    }
    return out;
  }

  #checkIdentity(name: string, value: string): void {
    const row = this.#db.prepare(`SELECT value FROM meta WHERE name = ?`).get(name);
    if (row === undefined) {
      this.#db.prepare(`INSERT INTO meta (name, value) VALUES (?, ?)`).run(name, value);
    } else if (row.value !== value) {
      this.#db.close();
      throw new StoreError(
        "conflict",
        `Cannot open store: file belongs to ${name} "${String(row.value)}", not "${value}"`,
      );
    }
  }

  // Tables and columns are only ever added, with defaults: an older file opens as is, a newer one too.
  #ensureTable(spec: TableSpec): void {
    const db = this.#db;
    const existed = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(
      spec.name,
    );
    const wanted: [string, string][] = [
      ...ROW_COLUMNS,
      ...spec.filters.map((field): [string, string] => [filterColumn(field), "TEXT"]),
    ];
    const columns = wanted.map(([column, type]) => `${column} ${type}`).join(", ");
    db.exec(
      `CREATE TABLE IF NOT EXISTS ${spec.name} (seq INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, ${columns})`,
    );
    if (existed !== undefined) {
      const have = new Set(db.prepare(`PRAGMA table_info(${spec.name})`).all().map((c) => String(c.name)));
      for (const [column, type] of wanted) {
        if (have.has(column)) continue;
        db.exec(`ALTER TABLE ${spec.name} ADD COLUMN ${column} ${type}`);
        const field = spec.filters.find((f) => filterColumn(f) === column);
        // A filter field added later is filled from the bodies already held, so filters see every row.
        if (field !== undefined) {
          db.exec(`UPDATE ${spec.name} AS r SET ${column} = (
            SELECT CASE WHEN json_type(c.body, '$.${field}') = 'text' THEN json_extract(c.body, '$.${field}') END
            FROM changes c WHERE c.site = r.site AND c.version = r.version)`);
        }
      }
    }
    if (existed === undefined) {
      // A table this release adds may already have changes in the log, carried unread by an older release.
      const rows = db.prepare(`SELECT * FROM changes WHERE tbl = ?`).all(spec.name) as unknown as ChangeRow[];
      for (const row of rows) this.#merge(toChange(row), parseStoredBody(row.body));
    }
  }

  #rowWriters(spec: TableSpec): RowWriters {
    let writers = this.#writers.get(spec.name);
    if (writers === undefined) {
      const columns = [
        "seq",
        "key",
        "deleted",
        "hlc",
        "site",
        "version",
        "owner",
        ...spec.filters.map(filterColumn),
      ];
      const updates = columns.filter((c) => c !== "key").map((c) => `${c} = excluded.${c}`).join(", ");
      const upsert = `INSERT INTO ${spec.name} (${columns.join(", ")}) VALUES (${
        columns.map(() => "?").join(", ")
      })
        ON CONFLICT (key) DO UPDATE SET ${updates}`;
      const row = spec.name;
      writers = {
        local: this.#db.prepare(`${upsert} WHERE ${row}.owner = excluded.owner`),
        merge: this.#db.prepare(
          `${upsert} WHERE excluded.hlc > ${row}.hlc OR (excluded.hlc = ${row}.hlc AND excluded.site > ${row}.site)`,
        ),
      };
      this.#writers.set(spec.name, writers);
    }
    return writers;
  }

  // Writes the row `change` names, if `statement`'s condition lets it; true when the row changed.
  #putRow(
    spec: TableSpec,
    statement: StatementSync,
    change: Change,
    body: Record<string, unknown> | undefined,
  ): boolean {
    const params: SQLInputValue[] = [
      this.#seq + 1,
      change.key,
      change.deleted ? 1 : 0,
      change.hlc,
      change.site,
      change.version,
      change.owner,
    ];
    for (const field of spec.filters) params.push(filterValue(body, field));
    if (Number(statement.run(...params).changes) === 0) return false;
    this.#seq += 1;
    return true;
  }

  #statement(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreError("unavailable", `Store is closed: site "${this.siteId}"`);
  }

  #transaction<R>(fn: () => R): R {
    this.#assertOpen();
    this.#statement("BEGIN IMMEDIATE").run();
    try {
      const result = fn();
      this.#statement("COMMIT").run();
      return result;
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    }
  }

  #emit(event: CommitEvent): void {
    if (this.#listeners.size === 0) return;
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch (error) {
        // A failing listener must not undo a commit or starve other listeners.
        console.error(error);
      }
    }
  }

  /** Calls `listener` after every commit that brought new changes. Returns the unsubscribe function. */
  onCommit(listener: (event: CommitEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** @internal Reads a live body's JSON text. */
  readBody(table: string, key: string): string | undefined {
    this.#assertOpen();
    const row = this.#statement(
      `SELECT c.body FROM ${table} r JOIN changes c ON c.site = r.site AND c.version = r.version
       WHERE r.key = ? AND r.deleted = 0`,
    ).get(key);
    return row === undefined ? undefined : String(row.body);
  }

  /**
   * The change that wrote a live row as this replica holds it, as it travels (signed once it has left its
   * writer); `undefined` for no row or a tombstone. Read the table first (its `Table` creates it).
   */
  rowChange(table: string, key: string): Change | undefined {
    this.#assertOpen();
    if (TABLES[table] === undefined) return undefined;
    const row = this.#statement(
      `SELECT c.* FROM ${table} r JOIN changes c ON c.site = r.site AND c.version = r.version
       WHERE r.key = ? AND r.deleted = 0`,
    ).get(key) as unknown as ChangeRow | undefined;
    return row === undefined ? undefined : toChange(row);
  }

  /** @internal Lists live bodies' JSON text, filtered on top-level fields. */
  listBodies(table: string, where: Partial<Record<string, string>>): string[] {
    this.#assertOpen();
    const filters = TABLES[table]?.filters ?? [];
    const clauses = ["r.deleted = 0"];
    const params: SQLInputValue[] = [];
    for (const [field, value] of Object.entries(where)) {
      if (value === undefined) continue;
      if (!FIELD_PATTERN.test(field)) {
        throw new StoreError(
          "invalid_argument",
          `Cannot filter ${table} on field "${field}": not a plain field name`,
        );
      }
      clauses.push(
        filters.includes(field) ? `r.${filterColumn(field)} = ?` : `json_extract(c.body, '$.${field}') = ?`,
      );
      params.push(value);
    }
    const sql = `SELECT c.body FROM ${table} r JOIN changes c ON c.site = r.site AND c.version = r.version
      WHERE ${clauses.join(" AND ")} ORDER BY r.key`;
    return this.#statement(sql).all(...params).map((row) => String(row.body));
  }

  /** @internal Writes one local change: the body, or a tombstone when `body` is null. */
  writeLocal(spec: TableSpec, key: string, body: Record<string, unknown> | null): Change {
    this.#assertOpen();
    let text: string | null = null;
    if (body !== null) {
      const checked = spec.schema.safeParse(body);
      if (!checked.success) {
        const issue = checked.error.issues[0];
        throw new StoreError(
          "invalid_argument",
          `Invalid ${spec.name} body "${key}": ${issue.path.join(".")}: ${issue.message}`,
        );
      }
      text = JSON.stringify(body);
      if (text.length > MAX_BODY_CHARS) {
        throw new StoreError(
          "invalid_argument",
          `Body too large for ${spec.name} row "${key}": ${text.length} chars`,
        );
      }
    }
    const written = this.#transaction(() => {
      const owner = spec.kind === "entity" ? this.#localOwner(spec, key, body) : "";
      const change: Change = {
        site: this.siteId,
        version: this.#ownVersion + 1,
        table: spec.name,
        key,
        hlc: this.#clock.tick(),
        owner,
        deleted: body === null,
        body: text,
      };
      this.#insertChange(change);
      // The clock is past every timestamp seen, so a local write always wins its row; the statement only refuses
      // a row another site owns, which saves reading the row first.
      if (!this.#putRow(spec, this.#rowWriters(spec).local, change, body ?? undefined)) {
        const existing = this.#rowOwner(spec.name, key);
        throw new StoreError(
          "conflict",
          `Cannot write ${spec.name} row "${key}": owned by Machine "${existing}", this is Machine "${this.siteId}"`,
        );
      }
      this.#ownVersion = change.version;
      if (this.#ownContiguous === change.version - 1) this.#ownContiguous = change.version;
      return change;
    });
    // Listeners run after COMMIT, never inside the transaction.
    this.#emit({ seq: this.#seq, changes: [written], origin: "local" });
    return written;
  }

  // The owner the body or key names; the row's current owner is checked by the write itself.
  #localOwner(spec: TableSpec, key: string, body: Record<string, unknown> | null): string {
    const named = body !== null
      ? spec.ownerOfBody?.(body)
      : spec.ownerOfKey?.(key) ?? this.#rowOwner(spec.name, key);
    if (named === undefined) {
      throw new StoreError(
        "not_found",
        `Cannot delete ${spec.name} row "${key}": no such row on this Machine`,
      );
    }
    if (named !== this.siteId) {
      throw new StoreError(
        "conflict",
        `Cannot write ${spec.name} row "${key}": owned by Machine "${named}", this is Machine "${this.siteId}"`,
      );
    }
    return this.siteId;
  }

  #rowOwner(table: string, key: string): string | undefined {
    const row = this.#statement(`SELECT owner FROM ${table} WHERE key = ?`).get(key);
    return row === undefined ? undefined : String(row.owner);
  }

  #insertChange(change: Change): void {
    this.#statement(
      `INSERT INTO changes (site, version, tbl, key, hlc, owner, deleted, body, sig)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      change.site,
      change.version,
      change.table,
      change.key,
      change.hlc,
      change.owner,
      change.deleted ? 1 : 0,
      change.body,
      change.sig ?? null,
    );
  }

  // Last writer wins on (hlc, site) for every table, decided in the upsert; ownership was already checked on the
  // change itself.
  #merge(change: Change, body: Record<string, unknown> | undefined): void {
    const spec = TABLES[change.table];
    if (spec === undefined) return;
    this.#putRow(spec, this.#rowWriters(spec).merge, change, body);
  }

  /**
   * Applies remote changes in one transaction. Re-applying a change is a no-op; a malformed or refused change
   * is listed in `rejected` and the rest still apply. An authenticated store verifies each signature here, once.
   */
  applyChanges(inputs: readonly unknown[]): ApplyResult {
    const { result, valid } = this.#screen(inputs);
    return this.#commitRemote(result, valid, false);
  }

  /**
   * {@linkcode Store.applyChanges} for the sync protocol. Verification is synchronous and the batch commits in the
   * same turn, so a change arriving twice at once (a push and a relay) is verified once and found a duplicate the
   * second time.
   */
  receive(inputs: readonly unknown[], options: { pulled?: boolean } = {}): Promise<ApplyResult> {
    try {
      const { result, valid } = this.#screen(inputs);
      return Promise.resolve(this.#commitRemote(result, valid, options.pulled === true));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  // Shape, table rules, clock bound and duplicates: everything decided without a signature.
  #screen(inputs: readonly unknown[]): { result: ApplyResult; valid: Screened[] } {
    this.#assertOpen();
    const result: ApplyResult = { applied: 0, duplicates: 0, rejected: [] };
    const valid: Screened[] = [];
    const exists = this.#statement(`SELECT 1 FROM changes WHERE site = ? AND version = ?`);
    const floor = this.#statement(`SELECT floor FROM sites WHERE site = ?`);
    inputs.forEach((input, index) => {
      const checked = checkChange(input);
      if ("reason" in checked) {
        const raw = (input ?? {}) as { site?: unknown; version?: unknown };
        result.rejected.push({
          index,
          site: typeof raw.site === "string" ? raw.site.slice(0, 64) : undefined,
          version: typeof raw.version === "number" ? raw.version : undefined,
          reason: checked.reason,
        });
        return;
      }
      const { change } = checked;
      const ahead = this.#clock.aheadMs(change.hlc);
      if (ahead > MAX_CLOCK_SKEW_MS) {
        result.rejected.push(rejection(
          index,
          change,
          `Refused change ${change.site}:${change.version}: its clock is ${
            Math.round(ahead / 1000)
          } s ahead of this Machine's (limit ${MAX_CLOCK_SKEW_MS / 1000} s)`,
        ));
        return;
      }
      // A version at or below the site's floor is held or was compacted away: applying it again could bring
      // back a row whose tombstone is gone.
      if (
        exists.get(change.site, change.version) !== undefined ||
        change.version <= Number(floor.get(change.site)?.floor ?? 0)
      ) {
        result.duplicates += 1;
        return;
      }
      valid.push({ index, ...checked });
    });
    return { result, valid };
  }

  // Keeps the changes signed by their site's admitted key. An admission in the batch admits its Machine for the
  // rest of the batch, so a joiner's first changes may travel with the admission that vouches for them.
  #authenticate(result: ApplyResult, valid: Screened[]): Screened[] {
    if (this.#signer === undefined) return valid;
    const admitted = new Map<string, string>();
    const keyOf = (site: string): string | undefined => admitted.get(site) ?? this.trustedKey(site);
    const accepted: Screened[] = [];
    let pending = valid;
    for (;;) {
      const waiting: Screened[] = [];
      for (const item of pending) {
        const { change, body, index } = item;
        const key = keyOf(change.site);
        if (key === undefined) {
          waiting.push(item);
          continue;
        }
        const good = change.sig !== undefined &&
          this.#verifier.verifySync(key, change.sig, changeMessage(this.clusterId, change));
        if (!good) {
          const what = change.sig === undefined ? "it is not signed" : "its signature does not match";
          result.rejected.push(
            rejection(index, change, `Refused change ${change.site}:${change.version}: ${what}`),
          );
          continue;
        }
        const refusal = this.#trustRule(change, body, key, keyOf);
        if (refusal !== undefined) {
          result.rejected.push(rejection(index, change, refusal));
          continue;
        }
        if (change.table === "members" && body !== undefined) {
          admitted.set(String(body.machine_id), String(body.signing_key));
        }
        accepted.push(item);
      }
      if (waiting.length === pending.length || waiting.length === 0) {
        for (const { index, change } of waiting) {
          result.rejected.push(rejection(
            index,
            change,
            `Refused change ${change.site}:${change.version}: Machine "${change.site}" is not admitted here`,
          ));
        }
        return accepted;
      }
      pending = waiting;
    }
  }

  // Rules that depend on who is admitted: keys never change, admissions are never withdrawn, and a Machine row
  // names the key that signed it.
  #trustRule(
    change: Change,
    body: Record<string, unknown> | undefined,
    key: string,
    keyOf: (site: string) => string | undefined,
  ): string | undefined {
    if (change.table === "members") {
      if (body === undefined) {
        return `Refused change ${change.site}:${change.version}: admissions are never deleted`;
      }
      const held = keyOf(String(body.machine_id));
      if (held !== undefined && held !== body.signing_key) {
        return `Refused change ${change.site}:${change.version}: Machine "${body.machine_id}" is admitted with another key`;
      }
    }
    if (change.table === "machines" && body?.signing_key !== undefined && body.signing_key !== key) {
      return `Refused change ${change.site}:${change.version}: its signing_key is not the key it is signed with`;
    }
    return undefined;
  }

  #commitRemote(
    result: ApplyResult,
    screened: Screened[],
    pulled: boolean,
  ): ApplyResult {
    const valid = this.#authenticate(result, screened);
    result.rejected.sort((a, b) => a.index - b.index);
    if (valid.length === 0) return result;
    const fresh: Change[] = [];
    const seqBefore = this.#seq;
    try {
      this.#transaction(() => {
        const touched = new Map<string, number>();
        const exists = this.#statement(`SELECT 1 FROM changes WHERE site = ? AND version = ?`);
        for (const { change, body } of valid) {
          if (exists.get(change.site, change.version) !== undefined) {
            result.duplicates += 1;
            continue;
          }
          this.#insertChange(change);
          this.#clock.observe(change.hlc);
          this.#merge(change, body);
          touched.set(change.site, Math.max(touched.get(change.site) ?? 0, change.version));
          fresh.push(change);
        }
        for (const [site, max] of touched) this.#advance(site, max);
        result.applied = fresh.length;
      });
    } catch (error) {
      this.#seq = seqBefore;
      if (error instanceof StoreError) throw error;
      throw new StoreError("internal", `Cannot apply ${valid.length} changes: ${String(error)}`, {
        cause: error,
      });
    }
    const own = fresh.filter((c) => c.site === this.siteId);
    // Our own changes coming back (a restored file) must not let us reuse their versions.
    for (const change of own) this.#ownVersion = Math.max(this.#ownVersion, change.version);
    if (fresh.length > 0) this.#emit({ seq: this.#seq, changes: fresh, origin: "remote", pulled });
    return result;
  }

  // Moves a site's contiguous watermark over every version now held without a gap.
  #advance(site: string, max: number): void {
    this.#statement(
      `INSERT INTO sites (site, contiguous, max) VALUES (?, 0, ?)
       ON CONFLICT (site) DO UPDATE SET max = MAX(max, excluded.max)`,
    ).run(site, max);
    const row = this.#statement(`SELECT contiguous, max FROM sites WHERE site = ?`).get(site)!;
    let contiguous = Number(row.contiguous);
    if (contiguous >= Number(row.max)) {
      if (site === this.siteId) this.#ownContiguous = contiguous;
      return;
    }
    const next = this.#statement(
      `SELECT version FROM changes WHERE site = ? AND version > ? ORDER BY version LIMIT 1000`,
    );
    for (;;) {
      const versions = next.all(site, contiguous).map((r) => Number(r.version));
      let moved = false;
      for (const v of versions) {
        if (v !== contiguous + 1) break;
        contiguous = v;
        moved = true;
      }
      if (!moved || versions.length < 1000) break;
    }
    this.#statement(`UPDATE sites SET contiguous = ? WHERE site = ?`).run(contiguous, site);
    if (site === this.siteId) this.#ownContiguous = contiguous;
  }

  // Every known site with its watermark and highest version; the own site's come from memory.
  #sites(): { site: string; contiguous: number; max: number }[] {
    const rows = this.#statement(`SELECT site, contiguous, max FROM sites ORDER BY site`).all().map((r) => ({
      site: String(r.site),
      contiguous: Number(r.contiguous),
      max: Number(r.max),
    }));
    if (this.#ownVersion === 0) return rows;
    const own = { site: this.siteId, contiguous: this.#ownContiguous, max: this.#ownVersion };
    const at = rows.findIndex((r) => r.site === this.siteId);
    if (at >= 0) rows[at] = own;
    else rows.push(own);
    return rows.sort((a, b) => (a.site < b.site ? -1 : a.site > b.site ? 1 : 0));
  }

  /** What this replica holds, per site. */
  vector(): VersionVector {
    this.#assertOpen();
    const vector: VersionVector = {};
    const rows = this.#sites();
    const islands = this.#statement(
      `SELECT min(version) AS lo, max(version) AS hi FROM (
         SELECT version, version - row_number() OVER (ORDER BY version) AS island
         FROM changes WHERE site = ? AND version > ?)
       GROUP BY island ORDER BY lo`,
    );
    for (const row of rows) {
      const held: SiteVersions = { c: Number(row.contiguous) };
      if (Number(row.max) > held.c) {
        held.r = islands.all(String(row.site), held.c).map((r) => [Number(r.lo), Number(r.hi)]);
      }
      vector[String(row.site)] = held;
    }
    return vector;
  }

  /** Changes this replica holds that a replica with `theirs` lacks, up to `limit` changes or about `maxChars`. */
  changesMissingFrom(theirs: VersionVector, limit = 5000, maxChars = 8 * 1024 * 1024): ChangePage {
    this.#assertOpen();
    const changes: Change[] = [];
    let chars = 0;
    // Admissions lead every reply: a receiver refuses a Machine's changes until it holds that Machine's admission,
    // so a page of them ahead of it would be refused whole, again and again.
    const admissions = new Set<string>();
    for (
      const r of this.#statement(`SELECT * FROM changes WHERE tbl = 'members'`)
        .all() as unknown as ChangeRow[]
    ) {
      if (holds(theirs[r.site], r.version) || changes.length >= limit) continue;
      changes.push(toChange(r));
      admissions.add(`${r.site}/${r.version}`);
      chars += 100 + r.key.length + (r.body?.length ?? 0);
    }
    const query = this.#statement(
      `SELECT * FROM changes WHERE site = ? AND version > ? ORDER BY version LIMIT ?`,
    );
    for (const row of this.#sites()) {
      const site = String(row.site);
      const held = theirs[site];
      if (held !== undefined && held.c >= Number(row.max)) continue;
      let after = held?.c ?? 0;
      for (;;) {
        const page = query.all(site, after, 1000) as unknown as ChangeRow[];
        for (const r of page) {
          after = r.version;
          if (holds(held, r.version) || admissions.has(`${r.site}/${r.version}`)) continue;
          if (changes.length >= limit || chars >= maxChars) return { changes, more: true };
          changes.push(toChange(r));
          chars += 100 + r.key.length + (r.body?.length ?? 0);
        }
        if (page.length < 1000) break;
      }
    }
    return { changes, more: false };
  }

  /** True when this replica holds every change `theirs` holds, e.g. a peer's vector a joiner waits for. */
  caughtUpWith(theirs: VersionVector): boolean {
    this.#assertOpen();
    const mine = this.vector();
    const count = this.#statement(
      `SELECT count(*) AS n FROM changes WHERE site = ? AND version BETWEEN ? AND ?`,
    );
    for (const [site, held] of Object.entries(theirs)) {
      const own = mine[site];
      for (const [from, to] of [[1, held.c], ...(held.r ?? [])]) {
        if (to < from) continue;
        if (own !== undefined && own.c >= to) continue;
        if (Number(count.get(site, from, to)?.n ?? 0) !== to - from + 1) return false;
      }
    }
    return true;
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
    this.#assertOpen();
    const horizon = encodeHlc({ ms: Math.max(0, Math.floor(this.#now()) - options.horizonMs), counter: 0 });
    const result: CompactResult = { superseded: 0, tombstones: 0 };
    this.#transaction(() => {
      // The own site's entry is refreshed here: its floor must be readable, and its count survive a reopen. A
      // Machine that never wrote gets none, so its vector does not name itself at 0.
      if (this.#ownVersion > 0) {
        this.#statement(
          `INSERT INTO sites (site, contiguous, max) VALUES (?, ?, ?) ON CONFLICT (site) DO UPDATE SET
           contiguous = MAX(contiguous, excluded.contiguous), max = MAX(max, excluded.max)`,
        ).run(this.siteId, this.#ownContiguous, this.#ownVersion);
      }
      const floors = new Map<string, number>();
      const note = (site: unknown, version: unknown): void => {
        floors.set(String(site), Math.max(floors.get(String(site)) ?? 0, Number(version)));
      };
      // Each site's latest change held stays, even superseded or a tombstone: a floor is then always followed by
      // a change its site signed, which is how a replica taking a full copy tells a true floor from an invented one.
      const below = (alias: string): string =>
        `${alias}.version <= coalesce((SELECT contiguous FROM sites s WHERE s.site = ${alias}.site), 0)
         AND ${alias}.version < (SELECT max(l.version) FROM changes l WHERE l.site = ${alias}.site)`;
      for (const spec of Object.values(TABLES)) {
        if (spec.name === "members") continue;
        const table = spec.name;
        const superseded = `FROM changes AS c WHERE c.tbl = '${table}' AND c.hlc < ? AND ${below("c")}
          AND (c.site, c.version) NOT IN (SELECT site, version FROM ${table})`;
        for (
          const row of this.#db.prepare(`SELECT c.site, max(c.version) AS v ${superseded} GROUP BY c.site`)
            .all(horizon)
        ) {
          note(row.site, row.v);
        }
        result.superseded += Number(
          this.#db.prepare(
            `DELETE FROM changes WHERE (site, version) IN (SELECT c.site, c.version ${superseded})`,
          )
            .run(horizon).changes,
        );
        // A tombstone's change goes only when it is the last change of its key held. An entity row goes with
        // it (only its owner writes it, in version order, so no older change can come back above the floor);
        // a name-keyed row stays as a bare tombstone row (key, clock, no body), so a stale write from a Machine
        // cut off longer than the horizon still loses to it.
        const entity = spec.kind === "entity";
        const lastChange =
          `r.key IN (SELECT key FROM changes WHERE tbl = '${table}' GROUP BY key HAVING count(*) = 1)
          AND EXISTS (SELECT 1 FROM changes c WHERE c.site = r.site AND c.version = r.version)`;
        const dead = this.#db.prepare(
          `SELECT r.key, r.site, r.version FROM ${table} AS r WHERE r.deleted = 1 AND r.hlc < ? AND ${
            below("r")
          }
           AND ((${lastChange})${
            entity ? ` OR r.key NOT IN (SELECT key FROM changes WHERE tbl = '${table}')` : ""
          })`,
        ).all(horizon);
        const dropChange = this.#statement(`DELETE FROM changes WHERE site = ? AND version = ?`);
        const dropRow = this.#statement(`DELETE FROM ${table} WHERE key = ?`);
        for (const row of dead) {
          dropChange.run(row.site as string, row.version as number);
          if (entity) dropRow.run(row.key as string);
          note(row.site, row.version);
          result.tombstones += 1;
        }
      }
      const raise = this.#statement(`UPDATE sites SET floor = MAX(floor, ?) WHERE site = ?`);
      for (const [site, version] of floors) raise.run(version, site);
    });
    // The freed pages are reused by later writes; the write-ahead log is folded in so it does not keep them too.
    if (result.superseded + result.tombstones > 0) this.checkpoint();
    return result;
  }

  /** Folds the write-ahead log into the main file and truncates it. */
  checkpoint(): void {
    this.#assertOpen();
    this.#db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }

  /** Each site's floor above 0: versions up to it missing from the log were compacted (or never needed). */
  floors(): Record<string, number> {
    this.#assertOpen();
    const floors: Record<string, number> = {};
    for (const row of this.#statement(`SELECT site, floor FROM sites WHERE floor > 0`).all()) {
      floors[String(row.site)] = Number(row.floor);
    }
    return floors;
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
    this.#assertOpen();
    const lie = (reason: string): StoreError =>
      new StoreError("conflict", `Refused the peer's full copy: ${reason}`);
    const impossible = impossibleClaim(peer.vector, peer.floors);
    if (impossible !== undefined) throw lie(impossible);
    const floorOf = (site: string): number =>
      Math.min(Math.max(0, Math.floor(peer.floors[site] ?? 0)), peer.vector[site]?.c ?? 0);
    const horizonMs = options.horizonMs ?? 7 * 24 * 60 * 60 * 1000;
    const recentMs = Math.floor(this.#now()) - horizonMs + MAX_CLOCK_SKEW_MS;
    const recent = recentMs <= 0
      ? undefined
      : encodeHlc({ ms: Math.min(recentMs, 0xffffffffffff), counter: 0 });
    let removed = 0;
    const seqBefore = this.#seq;
    try {
      this.#transaction(() => {
        const count = this.#statement(
          `SELECT count(*) AS n FROM changes WHERE site = ? AND version BETWEEN ? AND ?`,
        );
        const ownFloor = this.#statement(`SELECT floor FROM sites WHERE site = ?`);
        const latest = this.#statement(`SELECT max(version) AS v FROM changes WHERE site = ?`);
        const firstRecent = this.#statement(
          `SELECT min(version) AS v FROM changes WHERE site = ? AND hlc >= ?`,
        );
        for (const [site, held] of Object.entries(peer.vector)) {
          if (site !== this.siteId && this.#signer !== undefined && this.trustedKey(site) === undefined) {
            throw lie(`it names Machine "${site}", which is not admitted here`);
          }
          const floor = floorOf(site);
          // Versions at or below either floor were compacted (there or here); every other one must be held now.
          const below = Math.max(floor, Number(ownFloor.get(site)?.floor ?? 0));
          for (const [from, to] of [[below + 1, held.c], ...(held.r ?? [])]) {
            const lo = Math.max(from, below + 1);
            if (to < lo) continue;
            const missing = to - lo + 1 - Number(count.get(site, lo, to)?.n ?? 0);
            if (missing > 0) {
              throw lie(
                `it claims versions ${lo}..${to} of Machine "${site}" and ${missing} of them are not held here (never sent, or refused)`,
              );
            }
          }
          // Compaction keeps each site's latest change, so a true floor is followed by a change of its site, signed
          // by it, that the peer sent (or this replica held): a floor past every such change was invented.
          if (floor > 0 && Number(latest.get(site)?.v ?? 0) <= floor) {
            throw lie(`its floor ${floor} for Machine "${site}" is followed by no change of it`);
          }
          // A site's clock only moves forward with its versions, so a version at or below a floor is no newer
          // than the compacted change the floor names.
          const first = recent === undefined || floor === 0 ? null : firstRecent.get(site, recent)?.v;
          if (typeof first === "number" && first <= floor) {
            throw lie(
              `its floor ${floor} for Machine "${site}" covers version ${first}, newer than the compaction horizon`,
            );
          }
        }
        const raised = new Map<string, number>();
        const changesOf = this.#statement(`SELECT site, version FROM changes WHERE tbl = ? AND key = ?`);
        const forget = this.#statement(`DELETE FROM changes WHERE site = ? AND version = ?`);
        for (const spec of Object.values(TABLES)) {
          const stale = this.#db.prepare(`SELECT key, site, version FROM ${spec.name} WHERE deleted = 0`)
            .all()
            .filter((r) =>
              !seen.has(`${spec.name}\0${r.key}`) && holds(peer.vector[String(r.site)], Number(r.version))
            );
          const bury = this.#statement(`UPDATE ${spec.name} SET deleted = 1, seq = ? WHERE key = ?`);
          for (const row of stale) {
            const key = String(row.key);
            // The peer sends every change it holds above its floors: one it covers above them it would have sent.
            const covered = changesOf.all(spec.name, key)
              .map((c) => ({ site: String(c.site), version: Number(c.version) }))
              .filter((c) => holds(peer.vector[c.site], c.version));
            const kept = covered.find((c) => c.version > floorOf(c.site));
            if (kept !== undefined) {
              throw lie(
                `it holds ${spec.name} row "${
                  key.slice(0, 128)
                }" (Machine "${kept.site}" version ${kept.version}) above its floor but did not send it`,
              );
            }
            this.#seq += 1;
            bury.run(this.#seq, key);
            for (const c of covered) {
              forget.run(c.site, c.version);
              raised.set(c.site, Math.max(raised.get(c.site) ?? 0, c.version));
            }
            removed += 1;
          }
        }
        const adopt = this.#statement(
          `INSERT INTO sites (site, contiguous, max, floor) VALUES (?, ?, ?, ?) ON CONFLICT (site) DO UPDATE SET
           contiguous = MAX(contiguous, excluded.contiguous), max = MAX(max, excluded.max),
           floor = MAX(floor, excluded.floor)`,
        );
        for (const [site, held] of Object.entries(peer.vector)) {
          if (site === this.siteId || !SITE_ID_PATTERN.test(site)) continue;
          adopt.run(site, held.c, held.c, floorOf(site));
          this.#advance(site, held.c);
        }
        // This Machine's own changes the peer compacted left the log here too: its floor says so, so a replica
        // taking a full copy from this one finds no gap above it.
        const own = raised.get(this.siteId);
        if (own !== undefined) adopt.run(this.siteId, this.#ownContiguous, this.#ownVersion, own);
      });
    } catch (error) {
      this.#seq = seqBefore;
      throw error;
    }
    if (this.#seq > seqBefore) this.#emit({ seq: this.#seq, changes: [], origin: "remote", pulled: true });
    return removed;
  }

  /** Keys changed after local sequence number `seq`, per table, without reading whole tables. */
  changesSince(seq: number): StoreChanges {
    this.#assertOpen();
    const tables: Record<string, ChangedKey[]> = {};
    let last = seq;
    for (const spec of Object.values(TABLES)) {
      const rows = this.#statement(`SELECT key, deleted, seq FROM ${spec.name} WHERE seq > ? ORDER BY seq`)
        .all(seq);
      if (rows.length === 0) continue;
      tables[spec.name] = rows.map((r) => ({ key: String(r.key), deleted: r.deleted === 1 }));
      for (const r of rows) last = Math.max(last, Number(r.seq));
    }
    return { seq: last, tables };
  }

  /**
   * Yields what changed after `since` (default: now), woken by each commit, until `signal` aborts or the store
   * closes.
   */
  async *watch(options: { since?: number; signal?: AbortSignal } = {}): AsyncGenerator<StoreChanges> {
    let since = options.since ?? this.#seq;
    const signal = options.signal;
    while (!this.#closed && !signal?.aborted) {
      if (this.#seq > since) {
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
    this.#assertOpen();
    const tables: Record<string, unknown[]> = {};
    for (const spec of Object.values(TABLES)) {
      tables[spec.name] = this.#statement(
        `SELECT r.key, r.deleted, r.hlc, r.site, r.version, r.owner, c.body
         FROM ${spec.name} r LEFT JOIN changes c ON c.site = r.site AND c.version = r.version ORDER BY r.key`,
      ).all().map((r) => [r.key, r.deleted, r.hlc, r.site, r.version, r.owner, r.body]);
    }
    const log = this.#statement(`SELECT count(*) AS n FROM changes`).get();
    return JSON.stringify({ tables, vector: this.vector(), log: Number(log?.n ?? 0) });
  }

  /** Runs SQLite's integrity check; "ok" when the file is sound. */
  integrityCheck(): string {
    this.#assertOpen();
    return String(this.#db.prepare(`PRAGMA integrity_check`).get()?.integrity_check);
  }
}

/** Opens (or creates) a store file: WAL, synchronous=NORMAL, an explicit busy timeout. */
export function openStore(options: StoreOptions): Store {
  if (!SITE_ID_PATTERN.test(options.siteId)) {
    throw new StoreError("invalid_argument", `Invalid site id "${options.siteId}": expected [a-z0-9-]{1,64}`);
  }
  if (options.clusterId.length === 0 || options.clusterId.length > 128) {
    throw new StoreError(
      "invalid_argument",
      `Invalid cluster id "${options.clusterId}": expected 1 to 128 chars`,
    );
  }
  const timeout = options.busyTimeoutMs ?? 5000;
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(options.path, { timeout });
    db.exec(`PRAGMA busy_timeout = ${Math.floor(timeout)}`);
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
  } catch (error) {
    throw new StoreError("unavailable", `Cannot open store "${options.path}": ${String(error)}`, {
      cause: error,
    });
  }
  return new Store(db, options);
}
