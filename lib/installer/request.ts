// The installation interface callers use: the local command (first setup from install.sh), the upgrade request
// that starts a bounded systemd worker, the worker itself, and reading an attempt back. Every path that applies
// takes the same Machine-local lock.
import { join } from "node:path";
import {
  type AttemptRecord,
  checkAttemptId,
  checkRequestKey,
  findByRequestKey,
  isTerminal,
  journalHint,
  listAttempts,
  loadAttempt,
  newAttemptId,
  workerUnit,
  writeAttempt,
} from "./attempt.ts";
import { currentTree, currentVersion } from "./activate.ts";
import { InstallError } from "./errors.ts";
import { type InstallLock, lockHolder, lockIsHeld, waitLockInstall } from "./lock.ts";
import type { InstallPaths } from "./paths.ts";
import { layoutEnv } from "../permissions/mod.ts";
import type { PrerequisiteChoice } from "./prerequisites.ts";
import { checkChannel, checkVersion, majorLine, openReleaseSource, resolveChannel } from "./release.ts";
import { keepTestReleaseKey, readSavedSource, runAttempt } from "./run_attempt.ts";
import { releasePublicKey } from "./signature.ts";
import { activeState, startTransient, type SystemdDoor, type UpgradeWorker } from "./systemd.ts";
import { messageOf } from "../util/mod.ts";

/** An upgrade request: an exact version or a channel (resolved once), from the Machine's release source. */
export interface UpgradeRequest {
  /** Exact target version. */
  version?: string;
  /** Channel on the current release line, e.g. `stable`; default `stable` when no version is given. */
  channel?: string;
  /** Release source; default the one the Machine last installed from. Local callers only: remote callers never
   * choose where a privileged installer downloads from. */
  source?: string;
  /** Retries with the same key find the same attempt. */
  requestKey?: string;
  /** Seconds the new daemon has to answer as the target version. */
  readyTimeoutSeconds?: number;
}

/** The accepted (or found) attempt. */
export interface UpgradeAccepted {
  /** The attempt as recorded now. */
  attempt: AttemptRecord;
  /** True when the request key matched an attempt started earlier. */
  existing: boolean;
}

const WORKER_MAX_SECONDS = 1800;
const LOCK_WAIT_MS = 30_000;
const LIVE_UNIT_STATES = new Set(["active", "activating", "deactivating", "reloading"]);

/** Refuses `busy` when another attempt's worker is still alive. Call with the lock held. */
async function refuseIfOtherRunning(paths: InstallPaths, self: string, door: SystemdDoor): Promise<void> {
  for (const other of await listAttempts(paths)) {
    if (other.id === self || isTerminal(other)) continue;
    if (await workerAlive(paths, other, door)) {
      throw new InstallError(
        "busy",
        `Cannot start install attempt: attempt "${other.id}" (to ${other.target_version}) is still running on this Machine`,
        { "attempt_id": other.id },
      );
    }
  }
}

/**
 * Starts the worker of attempt `worker.id` as `ployz-upgrade-<id>` under systemd, running the current release's
 * own `bin/ployzd install --attempt <id>`. What the `ployz-systemd` door runs for the daemon.
 */
export async function startUpgradeWorker(paths: InstallPaths, worker: UpgradeWorker): Promise<void> {
  const id = checkAttemptId(worker.id);
  const target = checkVersion(worker.target);
  const tree = await currentTree(paths);
  if (tree === undefined) {
    throw new InstallError(
      "conflict",
      `Cannot start an upgrade worker: Ployz is not installed under "${paths.prefix}"`,
    );
  }
  const args = [join(tree, "bin", "ployzd"), "install", "--attempt", id];
  if (worker.readyTimeoutSeconds !== undefined) {
    if (!Number.isInteger(worker.readyTimeoutSeconds) || worker.readyTimeoutSeconds < 1) {
      throw new InstallError("invalid_argument", `Invalid ready timeout "${worker.readyTimeoutSeconds}"`);
    }
    args.push("--ready-timeout", String(worker.readyTimeoutSeconds));
  }
  await startTransient({
    unit: workerUnit(id),
    argv: args,
    env: {
      ...layoutEnv(paths.layout, { relocatedOnly: true }),
      "DENO_DIR": "/var/cache/ployz/install",
      "NO_COLOR": "1",
    },
    runtimeMaxSec: WORKER_MAX_SECONDS,
    description: `Ployz upgrade attempt ${id} to ${target}`,
  });
}

/** systemd reached directly: the installer's own processes (`ployzd install`, the worker). */
export function directSystemd(paths: InstallPaths): SystemdDoor {
  return { activeState, startWorker: (worker) => startUpgradeWorker(paths, worker) };
}

async function workerAlive(paths: InstallPaths, record: AttemptRecord, door: SystemdDoor): Promise<boolean> {
  if (record.worker === "unit" && LIVE_UNIT_STATES.has(await door.activeState(workerUnit(record.id)))) {
    return true;
  }
  return (await lockIsHeld(paths)) && (await lockHolder(paths)) === record.id;
}

/**
 * Accepts an upgrade and starts its worker as `ployz-upgrade-<id>` under systemd, running the current release's
 * own `bin/ployzd install --attempt <id>`; returns without waiting for it. The channel is resolved here, once.
 * A request key already used returns that attempt. Refuses `busy` while another attempt runs.
 */
export async function requestUpgrade(
  paths: InstallPaths,
  request: UpgradeRequest,
  door: SystemdDoor = directSystemd(paths),
): Promise<UpgradeAccepted> {
  const requestKey = checkRequestKey(request.requestKey ?? `auto-${crypto.randomUUID()}`);
  const found = await findByRequestKey(paths, requestKey);
  if (found !== undefined) return { attempt: await readAttempt(paths, found.id, door), existing: true };
  if (request.version !== undefined && request.channel !== undefined) {
    throw new InstallError("invalid_argument", "Cannot upgrade to both a version and a channel: give one");
  }
  const tree = await currentTree(paths);
  const from = await currentVersion(paths);
  if (tree === undefined || from === undefined) {
    throw new InstallError(
      "conflict",
      `Cannot upgrade: Ployz is not installed under "${paths.prefix}" (run install.sh first)`,
    );
  }
  const saved = await readSavedSource(paths);
  const sourceBase = request.source ?? saved?.source;
  if (sourceBase === undefined) {
    throw new InstallError(
      "invalid_argument",
      'Cannot upgrade: this Machine has no release source recorded (a host provisioned from a directory records none); run "ployzd install --upgrade --source DIR|URL" on it',
    );
  }
  const source = openReleaseSource(sourceBase);
  const id = newAttemptId();
  // A running attempt refuses at once; otherwise wait out a finished worker still cleaning its staging (which
  // can take seconds for a whole release tree) or a status reader's momentary probe of the lock.
  await refuseIfOtherRunning(paths, id, door);
  await using _lock = await waitLockInstall(paths, id, LOCK_WAIT_MS);
  await refuseIfOtherRunning(paths, id, door);
  let channel: string | undefined;
  let target: string;
  if (request.version !== undefined) target = checkVersion(request.version);
  else {
    channel = checkChannel(request.channel ?? saved?.channel ?? "stable");
    target = await resolveChannel(source, majorLine(from), channel);
  }
  const now = new Date().toISOString();
  let record: AttemptRecord = await writeAttempt(paths, {
    id,
    "request_key": requestKey,
    "target_version": target,
    ...(channel ? { channel } : {}),
    source: source.base,
    "from_version": from,
    stage: "accepted",
    "started_at": now,
    "updated_at": now,
    "journal_hint": journalHint(id, "unit"),
    worker: "unit",
  });
  if (from === target) {
    record = await writeAttempt(paths, { ...record, stage: "done", outcome: "succeeded", noop: true });
    return { attempt: record, existing: false };
  }
  try {
    await door.startWorker({ id, target, readyTimeoutSeconds: request.readyTimeoutSeconds });
  } catch (error) {
    const message = messageOf(error);
    record = await writeAttempt(paths, {
      ...record,
      outcome: "failed",
      error: message,
      "error_code": "unavailable",
    });
  }
  return { attempt: record, existing: false };
}

/**
 * The worker side of an accepted upgrade: waits (bounded) for the lock the requester released, then runs the
 * attempt to a terminal outcome.
 */
export async function runWorker(
  paths: InstallPaths,
  id: string,
  options: { readyTimeoutMs?: number; log?: (line: string) => void; workerRelease?: string } = {},
): Promise<AttemptRecord> {
  const record = await loadAttempt(paths, checkAttemptId(id));
  if (isTerminal(record)) return record;
  let lock: InstallLock;
  try {
    lock = await waitLockInstall(paths, id, 60_000);
  } catch (error) {
    const message = messageOf(error);
    return await writeAttempt(paths, { ...record, outcome: "failed", error: message, "error_code": "busy" });
  }
  try {
    return await runAttempt(paths, record, { ...options, prerequisites: "skip" });
  } finally {
    await lock.release();
  }
}

/**
 * `PLOYZ_RELEASE_PUBLIC_KEY` of a local install, checked against its source now (an https source with a test key
 * is refused before anything starts).
 */
function testReleaseKey(sourceBase: string): string | undefined {
  const key = Deno.env.get("PLOYZ_RELEASE_PUBLIC_KEY") || undefined;
  if (key !== undefined) releasePublicKey(sourceBase, () => key);
  return key;
}

/** A local install from a tarball install.sh already downloaded; runs in this process. */
export interface LocalInstall {
  /** The release artifact `ployz-<version>-<triple>.tar.gz`. */
  tarball: string;
  /** Release source holding `<version>/SHA256SUMS`. */
  source: string;
  /** Exact version; default read from the artifact's name. */
  version?: string;
  /** Channel the version was resolved from, recorded for later upgrades. */
  channel?: string;
  /** Host prerequisites choice. */
  prerequisites?: PrerequisiteChoice;
  /** Retries with the same key find the same attempt. */
  requestKey?: string;
  /** Seconds the daemon has to answer as the target version. */
  readyTimeoutSeconds?: number;
  /**
   * The release source recorded for later upgrades when it differs from `source`: SSH provisioning installs from
   * a private copy that is removed afterwards. `null` records none (an upgrade must then be given one).
   */
  recordSource?: string | null;
}

/** Installs (or upgrades in place) from a local artifact, holding the install lock throughout. */
export async function installFrom(
  paths: InstallPaths,
  request: LocalInstall,
  log?: (line: string) => void,
): Promise<AttemptRecord> {
  const requestKey = checkRequestKey(request.requestKey ?? `auto-${crypto.randomUUID()}`);
  const found = await findByRequestKey(paths, requestKey);
  if (found !== undefined) return await readAttempt(paths, found.id, directSystemd(paths));
  const name = request.tarball.split("/").pop() ?? "";
  const version = checkVersion(
    request.version ?? name.match(/^ployz-(.+)-[^-]+-[^-]+-[^-]+-[^-]+\.tar\.gz$/)?.[1] ?? "",
  );
  const source = openReleaseSource(request.source);
  if (typeof request.recordSource === "string") openReleaseSource(request.recordSource);
  const releaseKey = testReleaseKey(source.base);
  const id = newAttemptId();
  const door = directSystemd(paths);
  await refuseIfOtherRunning(paths, id, door);
  await using _lock = await waitLockInstall(paths, id, LOCK_WAIT_MS);
  await refuseIfOtherRunning(paths, id, door);
  // The test key is kept where only the installer writes (never the daemon), for later upgrade workers.
  await keepTestReleaseKey(paths, releaseKey);
  const now = new Date().toISOString();
  const record = await writeAttempt(paths, {
    id,
    "request_key": requestKey,
    "target_version": version,
    ...(request.channel ? { channel: checkChannel(request.channel) } : {}),
    source: source.base,
    stage: "accepted",
    "started_at": now,
    "updated_at": now,
    "journal_hint": journalHint(id, "process"),
    worker: "process",
  });
  return await runAttempt(paths, record, {
    fromTarball: request.tarball,
    prerequisites: request.prerequisites,
    readyTimeoutMs: request.readyTimeoutSeconds === undefined
      ? undefined
      : request.readyTimeoutSeconds * 1000,
    log,
    recordSource: request.recordSource,
  });
}

/**
 * Reads an attempt. One that has no terminal outcome while its worker is gone (its unit ended and it no longer
 * holds the install lock) reads as `interrupted`, and that verdict is recorded.
 */
export async function readAttempt(
  paths: InstallPaths,
  id: string,
  door: SystemdDoor = directSystemd(paths),
): Promise<AttemptRecord> {
  const record = await loadAttempt(paths, checkAttemptId(id));
  if (isTerminal(record) || (await workerAlive(paths, record, door))) return record;
  // Re-read: the worker may have finished between the first read and the liveness check.
  const again = await loadAttempt(paths, id);
  if (isTerminal(again)) return again;
  return await writeAttempt(paths, {
    ...again,
    outcome: "interrupted",
    error: `The attempt's worker ended without a result at stage "${again.stage}"`,
    "error_code": "unavailable",
  });
}
