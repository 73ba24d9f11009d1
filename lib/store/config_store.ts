/**
 * The operator's Config Store: a local SQLite file on the operator's disk (e.g. `~/.config/ployz/config.db`),
 * never replicated and never Cluster runtime truth. Tables and columns are only ever added, with defaults.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import { StoreError } from "./error.ts";

/** A Project's last saved state. */
export interface SavedState {
  /** Project name. */
  project: string;
  /** Normalized compose document. */
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
];

function nonEmpty(what: string, value: string): void {
  if (value.length === 0) throw new StoreError("invalid_argument", `Invalid ${what}: must not be empty`);
}

/** The operator's local bookkeeping. Open with {@linkcode openConfigStore}. */
export class ConfigStore {
  readonly #db: DatabaseSync;

  /** Use {@linkcode openConfigStore}. */
  constructor(db: DatabaseSync) {
    this.#db = db;
    for (const sql of SCHEMA) db.exec(sql);
  }

  /** Closes the file. */
  close(): void {
    this.#db.close();
  }

  /** Saves a Project's state, replacing the previous one. */
  saveState(state: SavedState): void {
    nonEmpty("project", state.project);
    this.#db.prepare(
      `INSERT INTO saved_state (project, compose, source_path, saved_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (project) DO UPDATE SET compose = excluded.compose, source_path = excluded.source_path,
       saved_at = excluded.saved_at`,
    ).run(state.project, JSON.stringify(state.compose), state.sourcePath, state.savedAt);
  }

  /** A Project's saved state, if any. */
  savedState(project: string): SavedState | undefined {
    const row = this.#db.prepare(`SELECT * FROM saved_state WHERE project = ?`).get(project);
    if (row === undefined) return undefined;
    return {
      project: String(row.project),
      compose: JSON.parse(String(row.compose)),
      sourcePath: String(row.source_path),
      savedAt: String(row.saved_at),
    };
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

/** Opens (or creates) the operator's Config Store at `path`. */
export function openConfigStore(path: string, options: { busyTimeoutMs?: number } = {}): ConfigStore {
  const timeout = options.busyTimeoutMs ?? 5000;
  try {
    const db = new DatabaseSync(path, { timeout });
    db.exec(`PRAGMA busy_timeout = ${Math.floor(timeout)}`);
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    return new ConfigStore(db);
  } catch (error) {
    throw new StoreError("unavailable", `Cannot open config store "${path}": ${String(error)}`, {
      cause: error,
    });
  }
}
