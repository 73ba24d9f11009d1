// `ployz machine add HOST`'s first half: make sure the host runs ployzd serve, installing it over SSH when it has
// none (lib/installer's provisionHost: probe, acquire, transfer, install), then observe serve ready through the
// same `ssh HOST ployzd dial-stdio` transport the join uses.
import { resolve } from "node:path";
import { CliError, PLOYZ_VERSION as PLOYZ_CLI_VERSION, UsageError } from "../../lib/cli/mod.ts";
import {
  displaySource,
  type PrerequisiteChoice,
  ProvisionError,
  provisionHost,
  type ProvisionOutcome,
  type RemoteShell,
  sshOptionsFromEnv,
  sshShell,
} from "../../lib/installer/mod.ts";
import type { MachineClient } from "../../lib/rpc/mod.ts";
import { targetMachine } from "./machine_target.ts";
import { messageOf, sleep } from "../../lib/util/mod.ts";

/** Where releases come from when neither `--release-source` nor `PLOYZ_RELEASE_SOURCE` says (install.sh's too). */
export const DEFAULT_RELEASE_SOURCE = "https://ployz.sh";
// Just installed: install.sh already saw the daemon answer locally, so this only rides out a restart in between.
// Already installed: one more try covers a flaky SSH connection; a serve that is down stays down.
const READY_WAIT_INSTALLED_MS = 30_000;
const READY_WAIT_KEPT_MS = 3_000;

/** The provisioning flags of `ployz machine add`. */
export interface ProvisionFlags {
  /** Release source: a directory (made absolute) or an http(s) URL. */
  source: string;
  /** Exact version. */
  version?: string;
  /** Channel, resolved once on this machine. */
  channel?: string;
  /** Host prerequisites choice. */
  prerequisites: PrerequisiteChoice;
  /** False with `--no-install`. */
  install: boolean;
}

/** The option specs `ployz machine add` takes for provisioning. */
export const PROVISION_OPTIONS = {
  "release-source": { type: "string" },
  version: { type: "string" },
  channel: { type: "string" },
  "install-prerequisites": { type: "boolean" },
  "skip-prerequisites": { type: "boolean" },
  "no-install": { type: "boolean" },
} as const;

/** Reads the provisioning flags; the source defaults to `PLOYZ_RELEASE_SOURCE`, then {@link DEFAULT_RELEASE_SOURCE}. */
export function provisionFlags(values: Record<string, unknown>): ProvisionFlags {
  if (values.version !== undefined && values.channel !== undefined) {
    throw new UsageError("Give --version or --channel, not both");
  }
  if (values["install-prerequisites"] && values["skip-prerequisites"]) {
    throw new UsageError("Give at most one of --install-prerequisites and --skip-prerequisites");
  }
  const given = typeof values["release-source"] === "string"
    ? values["release-source"]
    : Deno.env.get("PLOYZ_RELEASE_SOURCE") || DEFAULT_RELEASE_SOURCE;
  const source = /^https?:\/\//.test(given) ? given : resolve(given);
  return {
    source,
    ...(typeof values.version === "string" ? { version: values.version } : {}),
    ...(typeof values.channel === "string" ? { channel: values.channel } : {}),
    prerequisites: values["install-prerequisites"]
      ? "install"
      : values["skip-prerequisites"]
      ? "skip"
      : "auto",
    install: values["no-install"] !== true,
  };
}

/** A provisioned host: its client over SSH, what provisioning did, and the figures. */
export interface ProvisionedHost {
  /** Machine RPC through `ssh HOST ployzd dial-stdio`. */
  client: MachineClient;
  /** What provisioning observed and did. */
  outcome: ProvisionOutcome;
  /** The daemon version serve answered with. */
  daemonVersion: string;
  /** Milliseconds from the probe's start until serve answered. */
  totalMs: number;
}

/**
 * Provisions `destination` when it has no ployzd (see lib/installer's provisionHost), then waits, bounded, until
 * ployzd serve answers DescribeContract through `ssh HOST ployzd dial-stdio`. Progress goes to `say`, a line per
 * stage. Refusals are one-line {@link CliError}s naming the stage.
 */
export async function provisionOverSsh(
  destination: string,
  flags: ProvisionFlags,
  say: (line: string) => void,
): Promise<ProvisionedHost> {
  const started = Date.now();
  const ssh = sshOptionsFromEnv((key) => Deno.env.get(key));
  const shell = sshShell(destination, ssh);
  const outcome = await provisionHost({
    shell,
    source: flags.source,
    target: { version: flags.version, channel: flags.channel, fallback: PLOYZ_CLI_VERSION },
    prerequisites: flags.prerequisites,
    install: flags.install,
    progress: (stage, line) => say(`${stage}: ${line}`),
  }).catch((error) => {
    throw stageError(error);
  });
  const client = targetMachine({ ssh: destination, sudo: outcome.sudo, what: "the Machine to add" });
  const readyStarted = Date.now();
  const waitMs = outcome.action === "installed" ? READY_WAIT_INSTALLED_MS : READY_WAIT_KEPT_MS;
  let last = "";
  try {
    while (true) {
      try {
        const contract = await client.describeContract();
        const totalMs = Date.now() - started;
        outcome.timings.serve_ready = Date.now() - readyStarted;
        say(
          `serve_ready: ployzd serve answers through "ssh ${destination} ployzd dial-stdio" as ${contract.daemon_version} ` +
            `(${outcome.timings.serve_ready} ms); probe → serve ready took ${
              (totalMs / 1000).toFixed(1)
            } s, ` +
            `${outcome.bytesSent} bytes sent`,
        );
        return { client, outcome, daemonVersion: contract.daemon_version, totalMs };
      } catch (error) {
        last = messageOf(error);
        if (Date.now() - readyStarted > waitMs) break;
        await sleep(1000);
      }
    }
    const tail = await serveTail(shell, outcome.sudo);
    const hint = outcome.probe.uid !== 0 && !outcome.sudo
      ? ` (the SSH user is not root and has no passwordless sudo; ployzd's socket is root's and group ployz's)`
      : "";
    throw new CliError(
      "unavailable",
      `At stage serve_ready: ployzd serve on "${destination}" did not answer through ssh within ${
        (Date.now() - readyStarted) / 1000 | 0
      } s: ${last}${hint}${tail ? `; the host said: ${tail}` : ""}`,
      { details: { stage: "serve_ready", ...(tail ? { "host_output_tail": tail } : {}) } },
    );
  } catch (error) {
    client.close();
    throw error;
  }
}

/** What systemd says about ployz-serve, for a serve that does not answer. */
async function serveTail(shell: RemoteShell, sudo: boolean): Promise<string> {
  const s = sudo ? "sudo -n " : "";
  const result = await shell.run(
    `${s}systemctl is-active ployz-serve.service; ${s}journalctl -u ployz-serve.service -n 3 --no-pager -o cat`,
    { timeoutMs: 20_000 },
  ).catch(() => undefined);
  if (result === undefined) return "";
  return result.stdout.trim().split("\n").filter((l: string) => l.trim() !== "").slice(-4).join(" | ").slice(
    0,
    600,
  );
}

/** A provisioning refusal as one CLI line: `Cannot add … at stage S: …`. */
function stageError(error: unknown): unknown {
  if (!(error instanceof ProvisionError)) return error;
  return new CliError(error.code, `At stage ${error.stage}: ${error.message}`, { details: error.details });
}

/** The provisioning summary `--json` reports. */
export function provisionJson(host: ProvisionedHost, source: string): Record<string, unknown> {
  const o = host.outcome;
  return {
    action: o.action,
    host: { os: o.probe.os, arch: o.probe.arch, triple: o.probe.triple, uid: o.probe.uid, sudo: o.sudo },
    ...(o.target ? { "target_version": o.target.version } : {}),
    ...(o.target?.channel ? { channel: o.target.channel } : {}),
    "daemon_version": host.daemonVersion,
    "release_source": displaySource(source),
    "bytes_sent": o.bytesSent,
    ...(o.sha256 ? { sha256: o.sha256 } : {}),
    "stage_ms": o.timings,
    "probe_to_ready_ms": host.totalMs,
  };
}
