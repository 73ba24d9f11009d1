/**
 * History queries over the Log Store: which containers a selector names, and their lines in time order.
 *
 * @module
 */

import type { DatabaseSync, SQLInputValue } from "node:sqlite";
import type { ContainerIdentity } from "./containers.ts";
import type { LogStream } from "./log_entry.ts";
import { ObserveError } from "./errors.ts";

/** Selects containers by identity; every field given must match. */
export interface LogSelector {
  /** `ployz.project`. */
  project?: string;
  /** `ployz.service`. */
  service?: string;
  /** `ployz.deployment`. */
  deployment?: string;
  /** A container id, or a unique prefix of one. */
  container?: string;
}

/** A LogHistory request. */
export interface LogHistoryQuery extends LogSelector {
  /** Lines at or after this time (ns since the epoch). */
  since: bigint;
  /** Lines before this time (ns since the epoch); default: no bound. */
  until?: bigint;
  /** Keep only lines containing this text (a plain, case-sensitive substring). */
  grep?: string;
  /** At most this many lines: the newest ones in the window. 1..{@link MAX_HISTORY_LIMIT}. */
  limit: number;
}

/** The most lines one history query returns. */
export const MAX_HISTORY_LIMIT = 10_000;

/** One stored line with the identity of the container that wrote it. */
export interface LogLine {
  /** The line's row id; grows with insertion order. */
  id: number;
  /** The Machine that ran the container. */
  machineId: string;
  /** Docker's container id. */
  containerId: string;
  /** The container's name. */
  containerName: string;
  /** `ployz.project`. */
  project: string;
  /** `ployz.service`. */
  service: string;
  /** `ployz.deployment`. */
  deployment: string;
  /** `ployz.slot`. */
  slot: string;
  /** `stdout` or `stderr`. */
  stream: LogStream;
  /** When Docker received the line, ns since the epoch. */
  timeNano: bigint;
  /** The text, without its newline. */
  text: string;
  /** A fragment of a longer line: the next fragment of the same container continues it. */
  partial: boolean;
}

/** A LogHistory answer. */
export interface LogHistoryResult {
  /** Matching lines, oldest first. */
  lines: LogLine[];
  /** Whether older lines in the window were left out by `limit`. */
  truncated: boolean;
  /** Plain statements about what the answer cannot show, e.g. a Service this Machine holds no output of. */
  notes: string[];
}

interface ContainerRow extends ContainerIdentity {
  key: number;
}

/** The containers `selector` names; throws `ambiguous` when a container prefix matches several. */
export function selectContainers(db: DatabaseSync, selector: LogSelector): Map<number, ContainerRow> {
  const where: string[] = [];
  const args: SQLInputValue[] = [];
  for (const field of ["project", "service", "deployment"] as const) {
    if (selector[field] !== undefined) {
      where.push(`${field} = ?`);
      args.push(selector[field]);
    }
  }
  if (selector.container !== undefined) {
    where.push("(container_id = ? OR substr(container_id, 1, ?) = ?)");
    args.push(selector.container, selector.container.length, selector.container);
  }
  const rows = db.prepare(
    `SELECT key, container_id, name, machine_id, project, service, deployment, slot FROM containers
     ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""}`,
  ).all(...args);
  const found = new Map<number, ContainerRow>();
  for (const r of rows) {
    found.set(Number(r.key), {
      key: Number(r.key),
      containerId: String(r.container_id),
      name: String(r.name),
      machineId: String(r.machine_id),
      project: String(r.project),
      service: String(r.service),
      deployment: String(r.deployment),
      slot: String(r.slot),
    });
  }
  if (selector.container !== undefined) {
    const ids = new Set([...found.values()].map((c) => c.containerId));
    if (ids.size > 1 && !ids.has(selector.container)) {
      throw new ObserveError(
        "ambiguous",
        `Cannot select container "${selector.container}": the prefix matches ${ids.size} containers`,
        { candidates: [...ids].sort() },
      );
    }
    if (ids.has(selector.container)) {
      for (const [key, c] of found) if (c.containerId !== selector.container) found.delete(key);
    }
  }
  return found;
}

/** Why a selector found no container, as a note for the answer. */
export function emptySelectionNote(selector: LogSelector): string {
  const parts: string[] = [];
  if (selector.project !== undefined) parts.push(`project "${selector.project}"`);
  if (selector.service !== undefined) parts.push(`service "${selector.service}"`);
  if (selector.deployment !== undefined) parts.push(`deployment "${selector.deployment}"`);
  if (selector.container !== undefined) parts.push(`container "${selector.container}"`);
  const what = parts.length > 0 ? parts.join(", ") : "any container";
  return `This Machine holds no output of ${what}: it never ran such a container, or retention already deleted its output`;
}

/** Checks a history query's bounds; throws `invalid_argument`. */
export function checkHistoryQuery(query: LogHistoryQuery): void {
  if (!Number.isInteger(query.limit) || query.limit < 1 || query.limit > MAX_HISTORY_LIMIT) {
    throw new ObserveError(
      "invalid_argument",
      `Cannot query logs: limit "${query.limit}" is not between 1 and ${MAX_HISTORY_LIMIT}`,
    );
  }
  if (query.until !== undefined && query.until <= query.since) {
    throw new ObserveError(
      "invalid_argument",
      `Cannot query logs: until "${query.until}" is not after since "${query.since}"`,
    );
  }
}

const LINE_COLUMNS = "id, container, CAST(time_nano AS TEXT) AS t, stream, partial, text";

/** Runs a LogHistory query; see {@link LogHistoryQuery}. */
export function historyQuery(db: DatabaseSync, query: LogHistoryQuery): LogHistoryResult {
  checkHistoryQuery(query);
  const containers = selectContainers(db, query);
  if (containers.size === 0) return { lines: [], truncated: false, notes: [emptySelectionNote(query)] };
  const where = ["time_nano >= ?"];
  const args: SQLInputValue[] = [query.since];
  if (query.until !== undefined) {
    where.push("time_nano < ?");
    args.push(query.until);
  }
  if (isSelective(query)) {
    where.push("container IN (SELECT value FROM json_each(?))");
    args.push(JSON.stringify([...containers.keys()]));
  }
  if (query.grep !== undefined && query.grep !== "") {
    where.push("instr(text, ?) > 0");
    args.push(query.grep);
  }
  const rows = db.prepare(
    `SELECT ${LINE_COLUMNS} FROM lines WHERE ${where.join(" AND ")}
     ORDER BY time_nano DESC, id DESC LIMIT ?`,
  ).all(...args, query.limit + 1);
  const truncated = rows.length > query.limit;
  const lines = rows.slice(0, query.limit).reverse().map((r) => toLine(r, containers));
  return { lines, truncated, notes: [] };
}

/** Lines stored after row `afterId` for the given containers (all when `undefined`), oldest first. */
export function linesAfter(
  db: DatabaseSync,
  afterId: number,
  containers: Map<number, ContainerRow>,
  selective: boolean,
  grep: string | undefined,
  limit: number,
): LogLine[] {
  const where = ["id > ?"];
  const args: SQLInputValue[] = [afterId];
  if (selective) {
    where.push("container IN (SELECT value FROM json_each(?))");
    args.push(JSON.stringify([...containers.keys()]));
  }
  if (grep !== undefined && grep !== "") {
    where.push("instr(text, ?) > 0");
    args.push(grep);
  }
  const rows = db.prepare(
    `SELECT ${LINE_COLUMNS} FROM lines WHERE ${where.join(" AND ")} ORDER BY id LIMIT ?`,
  )
    .all(...args, limit);
  return rows.map((r) => toLine(r, containers));
}

/** The newest line id, or 0. */
export function lastLineId(db: DatabaseSync): number {
  return Number(db.prepare("SELECT coalesce(max(id), 0) AS id FROM lines").get()!.id);
}

/** Whether the selector narrows the containers at all. */
export function isSelective(selector: LogSelector): boolean {
  return selector.project !== undefined || selector.service !== undefined ||
    selector.deployment !== undefined ||
    selector.container !== undefined;
}

function toLine(row: Record<string, unknown>, containers: Map<number, ContainerRow>): LogLine {
  const c = containers.get(Number(row.container));
  return {
    id: Number(row.id),
    machineId: c?.machineId ?? "",
    containerId: c?.containerId ?? "",
    containerName: c?.name ?? "",
    project: c?.project ?? "",
    service: c?.service ?? "",
    deployment: c?.deployment ?? "",
    slot: c?.slot ?? "",
    stream: row.stream === 1 ? "stderr" : "stdout",
    timeNano: BigInt(String(row.t)),
    text: String(row.text),
    partial: row.partial === 1,
  };
}
