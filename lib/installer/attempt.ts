/**
 * The attempt record: a small Machine-local file per install or upgrade attempt,
 * `<dataDir>/install/attempts/<id>.json`, replaced atomically at every stage. It says what was asked (request key,
 * exact target, channel), how far the attempt got (stage) and how it ended (outcome, error). Detailed diagnostics
 * stay in journald (`journal_hint`). Readers are tolerant: unknown fields are kept.
 *
 * @module
 */

import { join } from "node:path";
import * as z from "zod";
import { writeFileAtomic } from "../util/mod.ts";
import { InstallError } from "./errors.ts";
import { attemptsDir, type InstallPaths } from "./paths.ts";

/** The stages of an attempt, in order. `switch_current` is the point after which the new release is in place. */
export const STAGES = [
  "accepted",
  "acquire",
  "verify_checksum",
  "unpack",
  "preflight",
  "prerequisites",
  "place_release",
  "switch_current",
  "write_units",
  "restart",
  "verify_ready",
  "done",
] as const;

/** One stage of an attempt. */
export type Stage = (typeof STAGES)[number];

/** How an attempt ended; absent while it runs. */
export type Outcome = "succeeded" | "failed" | "interrupted";

/** What the new daemon answered when the attempt judged it ready. */
export interface ReadyEvidence {
  /** The version the daemon reported over its socket. */
  "daemon_version": string;
  /** The Machine id the daemon reported. */
  "machine_id": string;
  /** How readiness was observed. */
  via: "describe_contract";
  /** When. */
  "observed_at": string;
}

/** The attempt record, as stored. Field names are snake_case on disk and on the wire. */
export interface AttemptRecord {
  /** Attempt id; the worker unit is `ployz-upgrade-<id>`. */
  id: string;
  /** The caller's request key: a retry with the same key finds this attempt. */
  "request_key": string;
  /** The exact version this attempt installs, resolved once. */
  "target_version": string;
  /** The channel the target was resolved from, when one was asked for. */
  channel?: string;
  /** The release source. */
  source: string;
  /** The version `current` pointed at when the attempt began, if any. */
  "from_version"?: string;
  /** The last stage entered. */
  stage: Stage;
  /** RFC 3339 times. */
  "started_at": string;
  /** Last write. */
  "updated_at": string;
  /** Terminal result. */
  outcome?: Outcome;
  /** Why it failed, as one line. */
  error?: string;
  /** The error code of the failure. */
  "error_code"?: string;
  /** Where detailed diagnostics are. */
  "journal_hint": string;
  /** `unit`: a `systemd-run` worker; `process`: the local command itself (first setup). */
  worker: "unit" | "process";
  /** True once `current` points at the target: a later failure left the new release in place. */
  replaced?: boolean;
  /** True when the target was already installed and nothing was done. */
  noop?: boolean;
  /** What `bin/ployzd dns --probe` of the staged release said; `no_spec` when no DNS spec was published to probe. */
  "dns_probe"?: "passed" | "not_built" | "no_spec";
  /** Prerequisite packages installed by this attempt. */
  "prerequisites_installed"?: string[];
  /** When the serve unit restart began. */
  "restart_started_at"?: string;
  /** When the new daemon answered with the target version. */
  "ready_at"?: string;
  /** The readiness evidence. */
  ready?: ReadyEvidence;
  /** Everything else a newer release wrote. */
  [key: string]: unknown;
}

const ID = /^[a-z0-9]{6,32}$/;
const REQUEST_KEY = /^[A-Za-z0-9._:-]{1,128}$/;

const RecordSchema = z.looseObject({
  id: z.string().regex(ID),
  "request_key": z.string(),
  "target_version": z.string(),
  stage: z.string(),
  "started_at": z.string(),
  "updated_at": z.string(),
  "journal_hint": z.string(),
});

/** Refuses anything but an attempt id (`[a-z0-9]{6,32}`), so an id never walks out of the attempts directory. */
export function checkAttemptId(id: string): string {
  if (!ID.test(id)) {
    throw new InstallError("invalid_argument", `Invalid attempt id "${id}": expected [a-z0-9]{6,32}`);
  }
  return id;
}

/** Refuses request keys outside `[A-Za-z0-9._:-]{1,128}`. */
export function checkRequestKey(key: string): string {
  if (!REQUEST_KEY.test(key)) {
    throw new InstallError(
      "invalid_argument",
      `Invalid request key "${key}": expected [A-Za-z0-9._:-]{1,128}`,
    );
  }
  return key;
}

/** A new attempt id: a base-36 time prefix (so ids sort by start) and random hex. */
export function newAttemptId(now = Date.now()): string {
  const random = crypto.getRandomValues(new Uint8Array(3));
  return now.toString(36).padStart(9, "0") + [...random].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The systemd unit an upgrade attempt runs in. */
export function workerUnit(id: string): string {
  return `ployz-upgrade-${checkAttemptId(id)}.service`;
}

/** The journal command that shows an attempt's diagnostics. */
export function journalHint(id: string, worker: "unit" | "process"): string {
  return worker === "unit"
    ? `journalctl -u ployz-upgrade-${id}`
    : `the output of the "ployzd install" command that ran attempt ${id}`;
}

/** True once an attempt has a terminal outcome. */
export function isTerminal(record: AttemptRecord): boolean {
  return record.outcome !== undefined;
}

function recordPath(paths: InstallPaths, id: string): string {
  return join(attemptsDir(paths), `${checkAttemptId(id)}.json`);
}

/** Writes the record atomically, stamping `updated_at`. */
export async function writeAttempt(paths: InstallPaths, record: AttemptRecord): Promise<AttemptRecord> {
  await Deno.mkdir(attemptsDir(paths), { recursive: true, mode: 0o700 });
  const next = { ...record, "updated_at": new Date().toISOString() };
  await writeFileAtomic(recordPath(paths, record.id), JSON.stringify(next, null, 2) + "\n", { mode: 0o600 });
  return next;
}

/** Reads the stored record as written; `not_found` when there is none. */
export async function loadAttempt(paths: InstallPaths, id: string): Promise<AttemptRecord> {
  let text: string;
  try {
    text = await Deno.readTextFile(recordPath(paths, id));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new InstallError("not_found", `Cannot find install attempt "${id}" on this Machine`);
    }
    throw error;
  }
  const parsed = RecordSchema.safeParse(JSON.parse(text));
  if (!parsed.success) {
    throw new InstallError("internal", `Cannot read install attempt "${id}": its record is malformed`);
  }
  return parsed.data as AttemptRecord;
}

/** Every readable record, oldest first. */
export async function listAttempts(paths: InstallPaths): Promise<AttemptRecord[]> {
  const out: AttemptRecord[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(attemptsDir(paths)));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const id = entry.name.replace(/\.json$/, "");
    if (!entry.isFile || !ID.test(id) || !entry.name.endsWith(".json")) continue;
    try {
      out.push(await loadAttempt(paths, id));
    } catch {
      // A torn or foreign file is not an attempt; the atomic writes never leave one of ours torn.
    }
  }
  return out;
}

/** The attempt started with `requestKey`, if any. */
export async function findByRequestKey(
  paths: InstallPaths,
  requestKey: string,
): Promise<AttemptRecord | undefined> {
  return (await listAttempts(paths)).find((r) => r.request_key === requestKey);
}

/** Keeps at most `keep` finished records (newest first) and every unfinished one. */
export async function pruneAttempts(paths: InstallPaths, keep = 32): Promise<void> {
  const finished = (await listAttempts(paths)).filter(isTerminal);
  for (const record of finished.slice(0, Math.max(0, finished.length - keep))) {
    await Deno.remove(recordPath(paths, record.id)).catch(() => {});
  }
}
