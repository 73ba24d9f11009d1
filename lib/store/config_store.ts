/**
 * The operator's Config Store: a local SQLite file on the operator's disk (e.g. `~/.config/ployz/config.db`),
 * never replicated and never Cluster runtime truth. Tables and columns are only ever added, with defaults.
 *
 * It holds what a re-plan needs (`ployz scale`, the Global catch-up of `machine add`), so it is private to the
 * operator: at every open its directory is made 0700 and its files 0600, with a warning when they were wider.
 * Environment values in Saved State are sealed (AES-256-GCM) under a key kept in a separate 0600 file,
 * `state.key`, beside the database: the file itself, a copy or a backup of it, or an `sqlite3 .dump` shows no
 * secret value in the clear, while a re-plan on the operator's own disk still reads them back.
 *
 * @module
 */

import { createCipheriv, createDecipheriv } from "node:crypto";
import { Buffer } from "node:buffer";
import { dirname, join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { StoreError } from "./errors.ts";

/** A Project's last saved state. */
export interface SavedState {
  /** Project name. */
  project: string;
  /** Normalized compose document; the values of its `environment` maps are sealed at rest. */
  compose: unknown;
  /** The compose file it was loaded from. */
  sourcePath: string;
  /** ISO 8601. */
  savedAt: string;
}

/** A Deployment as the operator recorded it. */
export interface DeploymentRecord {
  /** Deployment id. */
  id: string;
  /** Project name. */
  project: string;
  /** ISO 8601. */
  createdAt: string;
  /** Status, e.g. "running" or "done". */
  status: string;
  /** Per-target outcome, free-form JSON. */
  outcome: unknown;
}

/** One subnet allocation made by the operator during enrollment. Kept forever. */
export interface Allocation {
  /** Subnet, CIDR. */
  subnet: string;
  /** Machine Name the subnet went to. */
  machineName: string;
  /** Machine id the subnet went to. */
  machineId: string;
  /** Allocation state, e.g. "saved" or "published". */
  state: string;
  /** ISO 8601. */
  savedAt: string;
}

/** A receipt of one leg of a bounded command, found again by its request key. */
export interface Receipt {
  /** Key the client chose for the request. */
  requestKey: string;
  /** Which leg of the request. */
  leg: string;
  /** What the leg returned, JSON. */
  receipt: unknown;
  /** ISO 8601. */
  savedAt: string;
}

/** A named way to reach a Cluster's Entry Machine (`ployz context`). */
export interface ContextRecord {
  /** Context name. */
  name: string;
  /** `ssh://[user@]host[:port]` or `unix:///path/to/ployz.sock`. */
  url: string;
  /** ISO 8601. */
  savedAt: string;
}

/** Credentials for one registry, saved by `ployz registry login`; they never leave the operator's side. */
export interface RegistryCredential {
  /** Registry host (`reg.example:5000`, `docker.io`). */
  host: string;
  /** User name. */
  username: string;
  /** Password or token. */
  secret: string;
  /** ISO 8601. */
  savedAt: string;
}

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS saved_state (project TEXT PRIMARY KEY NOT NULL, compose TEXT NOT NULL,
    source_path TEXT NOT NULL DEFAULT '', saved_at TEXT NOT NULL DEFAULT '')`,
  `CREATE TABLE IF NOT EXISTS deployments (id TEXT PRIMARY KEY NOT NULL, project TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT '', status TEXT NOT NULL DEFAULT '', outcome TEXT NOT NULL DEFAULT 'null')`,
  `CREATE INDEX IF NOT EXISTS deployments_project ON deployments (project, created_at)`,
  `CREATE TABLE IF NOT EXISTS allocations (id INTEGER PRIMARY KEY AUTOINCREMENT, subnet TEXT NOT NULL,
    machine_name TEXT NOT NULL DEFAULT '', machine_id TEXT NOT NULL DEFAULT '', state TEXT NOT NULL DEFAULT '',
    saved_at TEXT NOT NULL DEFAULT '')`,
  `CREATE INDEX IF NOT EXISTS allocations_subnet ON allocations (subnet)`,
  `CREATE TABLE IF NOT EXISTS receipts (request_key TEXT NOT NULL, leg TEXT NOT NULL, receipt TEXT NOT NULL,
    saved_at TEXT NOT NULL DEFAULT '', PRIMARY KEY (request_key, leg))`,
  `CREATE TABLE IF NOT EXISTS contexts (name TEXT PRIMARY KEY NOT NULL, url TEXT NOT NULL,
    saved_at TEXT NOT NULL DEFAULT '')`,
  `CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS registry_credentials (host TEXT PRIMARY KEY NOT NULL, username TEXT NOT NULL,
    secret TEXT NOT NULL, saved_at TEXT NOT NULL DEFAULT '')`,
  `CREATE TABLE IF NOT EXISTS volume_runs (volume TEXT PRIMARY KEY NOT NULL, gen INTEGER NOT NULL,
    kind TEXT NOT NULL, args TEXT NOT NULL DEFAULT '{}', state TEXT NOT NULL, started_at TEXT NOT NULL DEFAULT '',
    ended_at TEXT NOT NULL DEFAULT '', evidence TEXT NOT NULL DEFAULT '')`,
];

/**
 * A Volume's newest Volume Run as the operator recorded it. The open run is the only lock on a Volume, and its gen
 * is what every SetVolumeCopy of the run carries.
 */
export interface VolumeRunRecord {
  /** The Volume. */
  volume: string;
  /** The run's number; each new run of the Volume takes the next. */
  gen: number;
  /** `mirror`, `sync`, `move`, `release` or `rm-mirror`. */
  kind: string;
  /** What the user asked (target Machine…), as JSON text. */
  args: string;
  /** `open` while it runs; then `done`, `failed`, `cancelled` or `lost`. */
  state: string;
  /** ISO 8601. */
  startedAt: string;
  /** ISO 8601, once ended. */
  endedAt: string;
  /** The evidence it ended with, one line. */
  evidence: string;
}

function nonEmpty(what: string, value: string): void {
  if (value.length === 0) throw new StoreError("invalid_argument", `Invalid ${what}: must not be empty`);
}

/** The operator's local bookkeeping. Open with {@linkcode openConfigStore}. */
export class ConfigStore {
  readonly #db: DatabaseSync;
  readonly #key: Uint8Array;

  /** Use {@linkcode openConfigStore}; `key` seals environment values in Saved State. */
  constructor(db: DatabaseSync, key: Uint8Array) {
    this.#db = db;
    this.#key = key;
    for (const sql of SCHEMA) db.exec(sql);
    this.#sealPlainRows();
  }

  // Saved States written before values were sealed are sealed in place, once.
  #sealPlainRows(): void {
    for (const row of this.#db.prepare(`SELECT project, compose FROM saved_state`).all()) {
      let plain = false;
      mapEnvironment(JSON.parse(String(row.compose)), (value) => {
        if (typeof value === "string") plain = true;
        return value;
      });
      if (!plain) continue;
      this.#db.prepare(`UPDATE saved_state SET compose = ? WHERE project = ?`).run(
        JSON.stringify(this.#sealed(JSON.parse(String(row.compose)))),
        String(row.project),
      );
    }
  }

  #sealed(compose: unknown): unknown {
    return mapEnvironment(compose, (value) => typeof value === "string" ? seal(this.#key, value) : value);
  }

  /** Closes the file. */
  close(): void {
    this.#db.close();
  }

  /** Closes the file when a `using` scope ends. */
  [Symbol.dispose](): void {
    this.close();
  }

  /** Saves a Project's state, replacing the previous one. */
  saveState(state: SavedState): void {
    nonEmpty("project", state.project);
    this.#db.prepare(
      `INSERT INTO saved_state (project, compose, source_path, saved_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (project) DO UPDATE SET compose = excluded.compose, source_path = excluded.source_path,
       saved_at = excluded.saved_at`,
    ).run(state.project, JSON.stringify(this.#sealed(state.compose)), state.sourcePath, state.savedAt);
  }

  /** A Project's saved state, if any. */
  savedState(project: string): SavedState | undefined {
    const row = this.#db.prepare(`SELECT * FROM saved_state WHERE project = ?`).get(project);
    if (row === undefined) return undefined;
    const compose = mapEnvironment(
      JSON.parse(String(row.compose)),
      (value, path) => isSealed(value) ? unseal(this.#key, value, project, path) : value,
    );
    return {
      project: String(row.project),
      compose,
      sourcePath: String(row.source_path),
      savedAt: String(row.saved_at),
    };
  }

  /** Removes a Project's Saved State (with its removal mark: nothing re-plans the Project from it). */
  forgetState(project: string): void {
    this.#db.prepare(`DELETE FROM saved_state WHERE project = ?`).run(project);
  }

  /** The names of every Project with a Saved State, sorted. */
  savedProjects(): string[] {
    return this.#db.prepare(`SELECT project FROM saved_state ORDER BY project`).all().map((row) =>
      String(row.project)
    );
  }

  /** Records or updates a Deployment. */
  saveDeployment(record: DeploymentRecord): void {
    nonEmpty("deployment id", record.id);
    this.#db.prepare(
      `INSERT INTO deployments (id, project, created_at, status, outcome) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, outcome = excluded.outcome`,
    ).run(record.id, record.project, record.createdAt, record.status, JSON.stringify(record.outcome ?? null));
  }

  /** One Deployment record. */
  deployment(id: string): DeploymentRecord | undefined {
    const row = this.#db.prepare(`SELECT * FROM deployments WHERE id = ?`).get(id);
    return row === undefined ? undefined : toDeployment(row);
  }

  /** A Project's Deployments, newest first. */
  deployments(project: string): DeploymentRecord[] {
    return this.#db.prepare(`SELECT * FROM deployments WHERE project = ? ORDER BY created_at DESC, id DESC`)
      .all(project).map(toDeployment);
  }

  /** Appends an allocation; call before publishing it, so a crash never forgets a handed-out subnet. */
  recordAllocation(allocation: Allocation): void {
    nonEmpty("subnet", allocation.subnet);
    this.#db.prepare(
      `INSERT INTO allocations (subnet, machine_name, machine_id, state, saved_at) VALUES (?, ?, ?, ?, ?)`,
    ).run(
      allocation.subnet,
      allocation.machineName,
      allocation.machineId,
      allocation.state,
      allocation.savedAt,
    );
  }

  /** Every allocation ever recorded, oldest first, optionally for one subnet. */
  allocations(subnet?: string): Allocation[] {
    const rows = subnet === undefined
      ? this.#db.prepare(`SELECT * FROM allocations ORDER BY id`).all()
      : this.#db.prepare(`SELECT * FROM allocations WHERE subnet = ? ORDER BY id`).all(subnet);
    return rows.map((row) => ({
      subnet: String(row.subnet),
      machineName: String(row.machine_name),
      machineId: String(row.machine_id),
      state: String(row.state),
      savedAt: String(row.saved_at),
    }));
  }

  /** Stores a receipt for one leg of a request; a later receipt for the same leg replaces it. */
  saveReceipt(receipt: Receipt): void {
    nonEmpty("request key", receipt.requestKey);
    this.#db.prepare(
      `INSERT INTO receipts (request_key, leg, receipt, saved_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (request_key, leg) DO UPDATE SET receipt = excluded.receipt, saved_at = excluded.saved_at`,
    ).run(receipt.requestKey, receipt.leg, JSON.stringify(receipt.receipt ?? null), receipt.savedAt);
  }

  /** The receipts of the `limit` requests saved to most recently, newest request first, each by leg. */
  recentReceipts(limit: number): Receipt[] {
    const keys = this.#db.prepare(
      `SELECT request_key, MAX(saved_at) AS last FROM receipts GROUP BY request_key ORDER BY last DESC LIMIT ?`,
    ).all(limit).map((row) => String(row.request_key));
    return keys.flatMap((key) => this.receipts(key));
  }

  /** Receipts of a request, by leg. */
  receipts(requestKey: string): Receipt[] {
    return this.#db.prepare(`SELECT * FROM receipts WHERE request_key = ? ORDER BY leg`).all(requestKey).map((
      row,
    ) => ({
      requestKey: String(row.request_key),
      leg: String(row.leg),
      receipt: JSON.parse(String(row.receipt)),
      savedAt: String(row.saved_at),
    }));
  }

  /** Saves a context, replacing one of the same name. */
  saveContext(context: ContextRecord): void {
    nonEmpty("context name", context.name);
    nonEmpty("context URL", context.url);
    this.#db.prepare(
      `INSERT INTO contexts (name, url, saved_at) VALUES (?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET url = excluded.url, saved_at = excluded.saved_at`,
    ).run(context.name, context.url, context.savedAt);
  }

  /** One context, if saved. */
  context(name: string): ContextRecord | undefined {
    const row = this.#db.prepare(`SELECT * FROM contexts WHERE name = ?`).get(name);
    return row === undefined ? undefined : toContext(row);
  }

  /** Every saved context, by name. */
  contexts(): ContextRecord[] {
    return this.#db.prepare(`SELECT * FROM contexts ORDER BY name`).all().map(toContext);
  }

  /** Removes a context (and unselects it if it was current); whether it existed. */
  removeContext(name: string): boolean {
    const removed = this.#db.prepare(`DELETE FROM contexts WHERE name = ?`).run(name).changes > 0;
    if (this.currentContext() === name) this.useContext(undefined);
    return removed;
  }

  /**
   * Opens a run of `volume`, or resumes the open one when it is the same run (kind and args). Another open run is
   * refused, naming it: one open run per Volume is the only lock.
   */
  openVolumeRun(
    volume: string,
    kind: string,
    args: string,
    now: string,
  ): { run: VolumeRunRecord; resumed: boolean } {
    nonEmpty("volume", volume);
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const row = this.#db.prepare(`SELECT * FROM volume_runs WHERE volume = ?`).get(volume);
      const prior = row === undefined ? undefined : toVolumeRun(row);
      if (prior?.state === "open") {
        if (prior.kind !== kind || prior.args !== args) {
          throw new StoreError(
            "conflict",
            `Volume "${volume}" has an open ${prior.kind} run (gen ${prior.gen}, ${prior.args}, started ${prior.startedAt}): re-run it to finish it, or cancel it with "ployz volume cancel ${volume}"`,
          );
        }
        this.#db.exec("COMMIT");
        return { run: prior, resumed: true };
      }
      const run: VolumeRunRecord = {
        volume,
        gen: (prior?.gen ?? 0) + 1,
        kind,
        args,
        state: "open",
        startedAt: now,
        endedAt: "",
        evidence: "",
      };
      this.#db.prepare(
        `INSERT INTO volume_runs (volume, gen, kind, args, state, started_at, ended_at, evidence)
         VALUES (?, ?, ?, ?, 'open', ?, '', '')
         ON CONFLICT (volume) DO UPDATE SET gen = excluded.gen, kind = excluded.kind, args = excluded.args,
           state = 'open', started_at = excluded.started_at, ended_at = '', evidence = ''`,
      ).run(volume, run.gen, kind, args, now);
      this.#db.exec("COMMIT");
      return { run, resumed: false };
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    }
  }

  /** Ends the open run `gen` of `volume` with a state and its evidence; a run no longer open is left as it is. */
  closeVolumeRun(volume: string, gen: number, state: string, evidence: string, now: string): void {
    this.#db.prepare(
      `UPDATE volume_runs SET state = ?, evidence = ?, ended_at = ? WHERE volume = ? AND gen = ? AND state = 'open'`,
    ).run(state, evidence, now, volume, gen);
  }

  /** The newest run of `volume`, if any. */
  volumeRun(volume: string): VolumeRunRecord | undefined {
    const row = this.#db.prepare(`SELECT * FROM volume_runs WHERE volume = ?`).get(volume);
    return row === undefined ? undefined : toVolumeRun(row);
  }

  /** The context `ployz context use` selected, if any. */
  currentContext(): string | undefined {
    const row = this.#db.prepare(`SELECT value FROM settings WHERE key = 'current_context'`).get();
    return row === undefined ? undefined : String(row.value);
  }

  /** Selects a context for later commands; `undefined` clears the selection. */
  useContext(name: string | undefined): void {
    if (name === undefined) {
      this.#db.prepare(`DELETE FROM settings WHERE key = 'current_context'`).run();
      return;
    }
    this.#db.prepare(
      `INSERT INTO settings (key, value) VALUES ('current_context', ?)
       ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
    ).run(name);
  }

  /** Saves the credentials of one registry, replacing earlier ones. */
  saveRegistryCredential(credential: RegistryCredential): void {
    nonEmpty("registry host", credential.host);
    nonEmpty("registry user name", credential.username);
    nonEmpty("registry password", credential.secret);
    this.#db.prepare(
      `INSERT INTO registry_credentials (host, username, secret, saved_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (host) DO UPDATE SET username = excluded.username, secret = excluded.secret,
         saved_at = excluded.saved_at`,
    ).run(credential.host, credential.username, credential.secret, credential.savedAt);
  }

  /** The saved credentials of a registry host, if any. */
  registryCredential(host: string): RegistryCredential | undefined {
    const row = this.#db.prepare(`SELECT * FROM registry_credentials WHERE host = ?`).get(host);
    return row === undefined ? undefined : {
      host: String(row.host),
      username: String(row.username),
      secret: String(row.secret),
      savedAt: String(row.saved_at),
    };
  }

  /** Forgets a registry's credentials; whether there were any. */
  removeRegistryCredential(host: string): boolean {
    return this.#db.prepare(`DELETE FROM registry_credentials WHERE host = ?`).run(host).changes > 0;
  }
}

function toVolumeRun(row: Record<string, unknown>): VolumeRunRecord {
  return {
    volume: String(row.volume),
    gen: Number(row.gen),
    kind: String(row.kind),
    args: String(row.args),
    state: String(row.state),
    startedAt: String(row.started_at),
    endedAt: String(row.ended_at),
    evidence: String(row.evidence),
  };
}

function toContext(row: Record<string, unknown>): ContextRecord {
  return { name: String(row.name), url: String(row.url), savedAt: String(row.saved_at) };
}

function toDeployment(row: Record<string, unknown>): DeploymentRecord {
  return {
    id: String(row.id),
    project: String(row.project),
    createdAt: String(row.created_at),
    status: String(row.status),
    outcome: JSON.parse(String(row.outcome)),
  };
}

/** Options of {@linkcode openConfigStore}. */
export interface ConfigStoreOptions {
  /** How long to wait for another process's write; default 5000 ms. */
  busyTimeoutMs?: number;
  /** Told, one line each, about a directory or file whose mode was wider than private and was narrowed. */
  warn?: (line: string) => void;
}

/** The file beside the database holding the key that seals environment values. */
export const STATE_KEY_FILE = "state.key";

/** Opens (or creates) the operator's Config Store at `path`, making its directory 0700 and its files 0600. */
export function openConfigStore(path: string, options: ConfigStoreOptions = {}): ConfigStore {
  const timeout = options.busyTimeoutMs ?? 5000;
  const warn = options.warn ?? ((line: string) => console.error(`warning: ${line}`));
  try {
    const dir = dirname(path);
    Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
    keepPrivate(dir, 0o700, warn);
    // Created private before SQLite opens it: SQLite gives its -wal and -shm files the database's mode.
    Deno.openSync(path, { create: true, write: true, mode: 0o600 }).close();
    keepPrivate(path, 0o600, warn);
    const key = stateKey(join(dir, STATE_KEY_FILE), warn);
    const db = new DatabaseSync(path, { timeout });
    db.exec(`PRAGMA busy_timeout = ${Math.floor(timeout)}`);
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    for (const suffix of ["-wal", "-shm"]) keepPrivate(path + suffix, 0o600, warn);
    return new ConfigStore(db, key);
  } catch (error) {
    if (error instanceof StoreError) throw error;
    throw new StoreError("unavailable", `Cannot open config store "${path}": ${String(error)}`, {
      cause: error,
    });
  }
}

/** Narrows `path` to `mode` when group or others may use it, with a warning; a missing path is left alone. */
function keepPrivate(path: string, mode: number, warn: (line: string) => void): void {
  let actual: number;
  try {
    actual = (Deno.statSync(path).mode ?? 0) & 0o777;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return;
    throw error;
  }
  if ((actual & 0o077) === 0) return;
  Deno.chmodSync(path, mode);
  warn(
    `"${path}" was mode ${actual.toString(8).padStart(4, "0")}, readable beyond its owner; ` +
      `set to ${mode.toString(8).padStart(4, "0")}`,
  );
}

/** The sealing key: read from `path`, or minted there (0600) on first use. */
function stateKey(path: string, warn: (line: string) => void): Uint8Array {
  try {
    const key = Deno.readFileSync(path);
    keepPrivate(path, 0o600, warn);
    if (key.length !== 32) {
      throw new StoreError(
        "unavailable",
        `Cannot use "${path}": a state key is 32 bytes, this file has ${key.length}`,
      );
    }
    return key;
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  const key = crypto.getRandomValues(new Uint8Array(32));
  const file = Deno.openSync(path, { createNew: true, write: true, mode: 0o600 });
  try {
    file.writeSync(key);
    file.syncSync();
  } finally {
    file.close();
  }
  return key;
}

/** A sealed environment value as stored: AES-256-GCM, `v1:` + base64 of nonce, tag and ciphertext. */
interface Sealed {
  sealed: string;
}

function isSealed(value: unknown): value is Sealed {
  return typeof value === "object" && value !== null && typeof (value as Sealed).sealed === "string" &&
    Object.keys(value).length === 1;
}

function seal(key: Uint8Array, value: string): Sealed {
  const nonce = crypto.getRandomValues(new Uint8Array(12));
  const cipher = createCipheriv("aes-256-gcm", key, nonce);
  const body = Buffer.concat([cipher.update(value, "utf8"), cipher.final()]);
  return { sealed: `v1:${Buffer.concat([nonce, cipher.getAuthTag(), body]).toString("base64")}` };
}

function unseal(key: Uint8Array, value: Sealed, project: string, path: string): string {
  const bytes = value.sealed.startsWith("v1:")
    ? Buffer.from(value.sealed.slice(3), "base64")
    : Buffer.alloc(0);
  try {
    if (bytes.length < 28) throw new Error("too short");
    const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, 12));
    decipher.setAuthTag(bytes.subarray(12, 28));
    return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString("utf8");
  } catch {
    throw new StoreError(
      "unavailable",
      `Cannot read the Saved State of Project "${project}": ${path} was sealed under another ${STATE_KEY_FILE}; ` +
        `deploy the Project again from its compose file`,
    );
  }
}

/** An `environment` map: every value a string (in the clear) or sealed; a Service named so is not one. */
function isEnvironmentMap(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) &&
    Object.values(value).every((v) => typeof v === "string" || isSealed(v));
}

/**
 * Copies `doc` with the values of every `environment` map (a Service's, a hook's) passed through `each`; the
 * rest of the document is kept as it is.
 */
function mapEnvironment(doc: unknown, each: (value: unknown, path: string) => unknown, path = ""): unknown {
  if (Array.isArray(doc)) return doc.map((item, i) => mapEnvironment(item, each, `${path}[${i}]`));
  if (typeof doc !== "object" || doc === null) return doc;
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(doc)) {
    const at = path === "" ? name : `${path}.${name}`;
    if (name === "environment" && isEnvironmentMap(value)) {
      out[name] = Object.fromEntries(
        Object.entries(value).map(([variable, v]) => [variable, each(v, `${at}.${variable}`)]),
      );
    } else {
      out[name] = mapEnvironment(value, each, at);
    }
  }
  return out;
}
