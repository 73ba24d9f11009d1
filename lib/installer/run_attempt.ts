// One install or upgrade attempt, stage by stage, with the record rewritten at every stage. The caller holds the
// install lock. No automatic rollback: a failure after `switch_current` leaves the new release in place and says
// so; the previous release stays under `releases/` for an operator's explicit recovery.
import { join } from "node:path";
import { type AttemptRecord, isTerminal, pruneAttempts, type Stage, writeAttempt } from "./attempt.ts";
import {
  currentVersion,
  linkBinaries,
  placeRelease,
  pruneReleases,
  switchCurrent,
  writeUnits,
} from "./activate.ts";
import { messageOf, writeFileAtomic } from "../util/mod.ts";
import { layoutEnv } from "../permissions/mod.ts";
import { InstallError } from "./errors.ts";
import { type InstallPaths, installStateDir, releasesDir, releaseTestKeyPath, stagingDir } from "./paths.ts";
import { preflight } from "./preflight.ts";
import {
  installPackages,
  missingPrerequisites,
  type PrerequisiteChoice,
  prerequisitesToInstall,
} from "./prerequisites.ts";
import { waitReady } from "./readiness.ts";
import { openReleaseSource } from "./release.ts";
import { releasePublicKey } from "./signature.ts";
import { acquire, makeStaging, unpack, verify } from "./stage.ts";
import { activeState, systemctl } from "./systemd.ts";

/** How an attempt runs. */
export interface RunOptions {
  /** Target triple of the artifact; default this runtime's. */
  triple?: string;
  /** A local tarball to use instead of downloading (install.sh hands it over). */
  fromTarball?: string;
  /** Host prerequisites choice. */
  prerequisites?: PrerequisiteChoice;
  /** How long the new daemon has to answer as the target version; default 120 s. */
  readyTimeoutMs?: number;
  /** Progress lines. */
  log?: (line: string) => void;
  /** The release the running worker executes from, kept by pruning. */
  workerRelease?: string;
  /** The source recorded for later upgrades instead of the attempt's own; `null` records none. */
  recordSource?: string | null;
}

/** The release source last installed from, so later upgrades need not be told again. */
export async function readSavedSource(
  paths: InstallPaths,
): Promise<{ source?: string; channel?: string } | undefined> {
  try {
    return JSON.parse(await Deno.readTextFile(join(installStateDir(paths), "source.json")));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

/**
 * Keeps (or, given none, removes) the test release key a local install was given, at `<prefix>/release-test-key`:
 * the installer writes there and the daemon cannot, so a daemon that writes attempt records still cannot make an
 * upgrade worker trust another key.
 */
export async function keepTestReleaseKey(paths: InstallPaths, key: string | undefined): Promise<void> {
  const path = releaseTestKeyPath(paths);
  if (key === undefined) {
    await Deno.remove(path).catch(() => {});
    return;
  }
  await Deno.mkdir(paths.prefix, { recursive: true, mode: 0o755 });
  await writeFileAtomic(path, `${key}\n`, { mode: 0o644 });
}

/** The kept test release key, if any. */
export async function readTestReleaseKey(paths: InstallPaths): Promise<string | undefined> {
  try {
    return (await Deno.readTextFile(releaseTestKeyPath(paths))).trim() || undefined;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

/** Runs `record` to a terminal outcome and returns the final record. Never throws for a failed stage. */
export async function runAttempt(
  paths: InstallPaths,
  start: AttemptRecord,
  options: RunOptions = {},
): Promise<AttemptRecord> {
  const log = options.log ?? (() => {});
  let record = start;
  if (isTerminal(record)) return record;
  const staging = stagingDir(paths, record.id);
  const enter = async (stage: Stage, extra: Partial<AttemptRecord> = {}): Promise<void> => {
    record = await writeAttempt(paths, { ...record, ...extra, stage });
    log(`stage ${stage}`);
  };
  try {
    const from = await currentVersion(paths);
    if (from === record.target_version) {
      record = await writeAttempt(paths, {
        ...record,
        "from_version": from,
        stage: "done",
        outcome: "succeeded",
        noop: true,
      });
      log(`Ployz ${from} is already installed: nothing to do`);
      return record;
    }
    const source = openReleaseSource(record.source);
    const testKey = Deno.env.get("PLOYZ_RELEASE_PUBLIC_KEY") || await readTestReleaseKey(paths);
    const triple = options.triple ?? Deno.build.target;
    await enter("acquire", from === undefined ? {} : { "from_version": from });
    await makeStaging(staging);
    const acquired = await acquire(source, record.target_version, triple, staging, options.fromTarball);
    await enter("verify_checksum");
    const digest = await verify(acquired, releasePublicKey(record.source, () => testKey));
    await enter("unpack", { sha256: digest });
    const tree = await unpack(acquired, staging);
    await enter("preflight");
    const checked = await preflight(tree, record.target_version, {
      denoDir: join(staging, "deno-dir"),
      dnsSpec: join(paths.layout.runDir, "dns.json"),
      env: layoutEnv(paths.layout, { relocatedOnly: true }),
      attemptId: record.id,
    });
    await enter("prerequisites", { "dns_probe": checked.dnsProbe });
    const firstSetup = from === undefined;
    const missing = await missingPrerequisites();
    const packages = prerequisitesToInstall(options.prerequisites ?? "auto", firstSetup, missing);
    await installPackages(packages);
    await enter("place_release", { "prerequisites_installed": packages, "prerequisites_missing": missing });
    await placeRelease(paths, tree, record.target_version, record.id);
    await enter("switch_current");
    await switchCurrent(paths, record.target_version);
    await linkBinaries(paths);
    await enter("write_units", { replaced: true });
    const changed = await writeUnits(paths);
    await systemctl(["daemon-reload"]);
    await enter("restart", { "units_written": changed, "restart_started_at": new Date().toISOString() });
    await systemctl(["enable", "ployz-serve.service"]);
    // Only the daemon restarts now. DNS keeps answering and ingress and applications keep serving; the daemon
    // moves DNS onto new software itself later. The Observe Store restarts only when it runs other software.
    await systemctl(["restart", "ployz-serve.service"]);
    const observeWas = await activeState("ployz-observe.service");
    if (observeWas === "active") await systemctl(["try-restart", "ployz-observe.service"]);
    await enter("verify_ready", { "observe_restarted": observeWas === "active" });
    const ready = await waitReady(
      join(paths.layout.runDir, "ployz.sock"),
      record.target_version,
      options.readyTimeoutMs ?? 120_000,
    );
    record = await writeAttempt(paths, {
      ...record,
      ready,
      "ready_at": ready.observed_at,
      stage: "done",
      outcome: "succeeded",
    });
    log(`Ployz ${record.target_version} is running and answered as ready`);
    await finish(paths, record, options, from);
    return record;
  } catch (error) {
    const failure = error instanceof InstallError
      ? { code: error.code, message: error.message }
      : { code: "internal", message: messageOf(error) };
    const previous = record.from_version;
    record = await writeAttempt(paths, {
      ...record,
      outcome: "failed",
      error: failure.message,
      "error_code": failure.code,
      ...(record.replaced
        ? {
          note: `No automatic rollback: "current" points at ${record.target_version}${
            previous ? `; the previous release is kept at "${join(releasesDir(paths), previous)}"` : ""
          }`,
        }
        : {}),
    });
    log(`failed at stage ${record.stage}: ${failure.message}`);
    await Deno.remove(staging, { recursive: true }).catch(() => {});
    return record;
  }
}

async function finish(
  paths: InstallPaths,
  record: AttemptRecord,
  options: RunOptions,
  from?: string,
): Promise<void> {
  await Deno.remove(stagingDir(paths, record.id), { recursive: true }).catch(() => {});
  const protect = new Set([from, options.workerRelease].filter((v): v is string => v !== undefined));
  await pruneReleases(paths, protect).catch(() => {});
  await pruneAttempts(paths).catch(() => {});
  const source = options.recordSource === undefined ? record.source : options.recordSource;
  const saved = {
    ...(source === null ? {} : { source }),
    ...(record.channel ? { channel: record.channel } : {}),
  };
  await writeFileAtomic(join(installStateDir(paths), "source.json"), JSON.stringify(saved) + "\n", {
    mode: 0o600,
  });
}
