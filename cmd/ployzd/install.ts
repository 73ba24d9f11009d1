import { basename, dirname } from "node:path";
import { CliError, type Command, type Io, UsageError } from "../../lib/cli/mod.ts";
import {
  type AttemptRecord,
  checkAttemptId,
  DEFAULT_INSTALL_PATHS,
  INSTALL_OPTIONS,
  InstallError,
  installFrom,
  type InstallPaths,
  type PrerequisiteChoice,
  readAttempt,
  requestUpgrade,
  runWorker,
} from "../../lib/installer/mod.ts";
import { layoutFromEnv } from "../../lib/permissions/mod.ts";
import { pollUntil } from "../../lib/util/mod.ts";

/**
 * `ployzd install`: first setup from a local artifact (`--from`, what install.sh hands over), an upgrade request
 * that runs as its own systemd unit (`--upgrade`), that unit's worker (`--attempt`), and reading an attempt
 * (`--status`).
 */
export const install: Command = {
  name: "install",
  summary: "Install or upgrade Ployz on this Machine",
  usage: "--from TARBALL --source SRC | --upgrade [--version V | --channel C] | --status ID [--json]",
  description: [
    "  --from TARBALL --source SRC   install this artifact now (first setup; install.sh runs this)",
    "  --upgrade                     start a bounded upgrade attempt as unit ployz-upgrade-<id>; prints its id",
    "  --status ID                   read an attempt: stage, outcome, verified version, journal hint",
    "Options: --version V (exact), --channel C (resolved once, default stable), --source DIR|URL (default: the",
    "source this Machine last installed from), --request-key K (a retry finds the same attempt), --wait (with",
    "--upgrade: wait for the outcome), --ready-timeout SECONDS, --install-prerequisites (docker.io, wireguard-go,",
    "wireguard-tools, libjemalloc2), --skip-prerequisites, --record-source SRC|none (with --from: the source later upgrades use,",
    "default --source). Prerequisites are installed only when asked, or when missing at first",
    "setup; never by --upgrade. There is no automatic rollback; the previous release stays for manual recovery.",
  ],
  options: INSTALL_OPTIONS,

  async run({ values, io }): Promise<number> {
    const modes = ["from", "upgrade", "attempt", "status"].filter((m) => values[m] !== undefined);
    if (modes.length !== 1) {
      throw new UsageError("Give exactly one of --from, --upgrade, --attempt or --status");
    }
    const paths: InstallPaths = { ...DEFAULT_INSTALL_PATHS, layout: layoutFromEnv((k) => Deno.env.get(k)) };
    const json = values.json === true;
    const readyTimeout = parseSeconds(values["ready-timeout"]);
    const log = (line: string): void => io.err(`ployzd install: ${line}\n`);
    try {
      switch (modes[0]) {
        case "status": {
          const record = await readAttempt(paths, checkAttemptId(String(values.status)));
          printRecord(io, record, json);
          return 0;
        }
        case "attempt": {
          const release = basename(dirname(Deno.execPath()));
          const record = await runWorker(paths, String(values.attempt), {
            readyTimeoutMs: readyTimeout === undefined ? undefined : readyTimeout * 1000,
            log,
            workerRelease: release,
          });
          printRecord(io, record, json);
          return record.outcome === "succeeded" ? 0 : 1;
        }
        case "upgrade": {
          if (values["install-prerequisites"]) {
            throw new UsageError(
              "--install-prerequisites belongs to setup: an upgrade never changes host packages",
            );
          }
          const accepted = await requestUpgrade(paths, {
            version: values.version as string | undefined,
            channel: values.channel as string | undefined,
            source: values.source as string | undefined,
            requestKey: values["request-key"] as string | undefined,
            readyTimeoutSeconds: readyTimeout,
          });
          let record = accepted.attempt;
          if (!json) {
            io.out(
              `${
                accepted.existing ? "Found" : "Accepted"
              } upgrade attempt ${record.id} to ${record.target_version}` +
                ` (follow: ployzd install --status ${record.id}; ${record.journal_hint})\n`,
            );
          }
          if (values.wait) record = await waitTerminal(paths, record.id);
          if (json) io.out(JSON.stringify({ ...record, existing: accepted.existing }) + "\n");
          else if (values.wait) printRecord(io, record, false);
          return record.outcome === "failed" || record.outcome === "interrupted" ? 1 : 0;
        }
        default: {
          if (values.source === undefined) {
            throw new UsageError("--from needs --source: where SHA256SUMS comes from");
          }
          const record = await installFrom(paths, {
            tarball: String(values.from),
            source: String(values.source),
            version: values.version as string | undefined,
            channel: values.channel as string | undefined,
            prerequisites: prerequisiteChoice(values),
            requestKey: values["request-key"] as string | undefined,
            readyTimeoutSeconds: readyTimeout,
            recordSource: values["record-source"] === "none"
              ? null
              : values["record-source"] as string | undefined,
          }, log);
          printRecord(io, record, json);
          if (record.outcome !== "succeeded") {
            throw new CliError(
              (record.error_code as InstallError["code"] | undefined) ?? "internal",
              `Install attempt ${record.id} failed at stage "${record.stage}": ${
                record.error ?? "no detail"
              }`,
              { details: { "attempt_id": record.id, stage: record.stage } },
            );
          }
          return 0;
        }
      }
    } catch (error) {
      if (error instanceof InstallError) {
        throw new CliError(error.code, error.message, { details: error.details });
      }
      throw error;
    }
  },
};

function prerequisiteChoice(values: Record<string, unknown>): PrerequisiteChoice {
  if (values["install-prerequisites"] && values["skip-prerequisites"]) {
    throw new UsageError("Give at most one of --install-prerequisites and --skip-prerequisites");
  }
  if (values["install-prerequisites"]) return "install";
  return values["skip-prerequisites"] ? "skip" : "auto";
}

function parseSeconds(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 3600) {
    throw new UsageError(`Invalid --ready-timeout "${String(value)}": expected whole seconds from 1 to 3600`);
  }
  return n;
}

async function waitTerminal(paths: InstallPaths, id: string): Promise<AttemptRecord> {
  const ended = await pollUntil(async () => {
    const record = await readAttempt(paths, id);
    return record.outcome !== undefined ? record : undefined;
  }, { timeoutMs: 1_900_000, intervalMs: 500 });
  return ended ?? await readAttempt(paths, id);
}

function printRecord(io: Io, record: AttemptRecord, json: boolean): void {
  if (json) {
    io.out(JSON.stringify(record) + "\n");
    return;
  }
  const lines = [
    `attempt ${record.id}: ${record.outcome ?? "running"} at stage ${record.stage}`,
    `target ${record.target_version}${record.channel ? ` (channel ${record.channel})` : ""}${
      record.from_version ? `, from ${record.from_version}` : ""
    }`,
  ];
  if (record.noop) lines.push(`Ployz ${record.target_version} is already installed: nothing to do`);
  if (record.ready) {
    lines.push(
      `verified: the daemon answered as ${record.ready.daemon_version} at ${record.ready.observed_at}`,
    );
  }
  if (record.dns_probe === "not_built") {
    lines.push("warning: this release has no Internal DNS probe (dns --probe)");
  }
  if (record.error) lines.push(`error: ${record.error}`);
  if (typeof record.note === "string") lines.push(record.note);
  if (record.outcome !== "succeeded") lines.push(`diagnostics: ${record.journal_hint}`);
  io.out(lines.join("\n") + "\n");
}
