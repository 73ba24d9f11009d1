/**
 * Installation and upgrade of Ployz on a Machine: the release source, private staging, checksum verification,
 * bounded preflight, activation (`<prefix>/releases/<version>/` plus an atomic `current` symlink swap), systemd
 * units generated from the deno.json permission sets, and the attempt record.
 *
 * Release source. A directory or `http(s)://` base holding `<base>/v<major>/<channel>` (one exact version) and
 * `<base>/<version>/ployz-<version>-<triple>.tar.gz` plus `<base>/<version>/SHA256SUMS`. A channel is resolved
 * once per attempt.
 *
 * Attempts. `<dataDir>/install/attempts/<id>.json`, rewritten atomically at every stage; every path that applies
 * (local command, SSH, RPC) takes `<runDir>/install.lock`, so a second attempt is refused `busy` naming the first.
 * An upgrade runs as its own transient unit `ployz-upgrade-<id>` so a daemon restart or a lost client does not
 * stop it. Success means the restarted daemon answered DescribeContract with the target version. There is no
 * automatic rollback: a failure after the swap is reported with its stage and `journalctl -u ployz-upgrade-<id>`,
 * and the previous release stays under `releases/` for explicit recovery (at most two old releases are kept).
 *
 * SSH provisioning (`ployz machine add HOST`). The operator's side of first setup: probe the host over SSH, acquire
 * the exact release on the operator's machine (it must reach the source anyway; the host may not), send install.sh
 * plus a one-version release source in one SSH session, and run install.sh there, which verifies the checksum and
 * hands over to `ployzd install`. A host already running ployzd is never reinstalled or upgraded by it.
 *
 * Never touched: the Machine's identity (`machine.json`, keys), pairing, configuration and data; DNS, ingress and
 * application containers keep running through an upgrade.
 *
 * @module
 */

// The ssh client's arguments: also a door of its own (./ssh/mod.ts), for the CLI's connection.
export { shellQuote, sshArgs, sshOptionsFromEnv, sshShell } from "./ssh/mod.ts";
export type { RemoteResult, RemoteShell, SshOptions } from "./ssh/mod.ts";

export { renderRuntimeUnit, renderUnit } from "./units.ts";
export type { UnitFile, UnitOptions, UnitSubcommand } from "./units.ts";
export { InstallError } from "./errors.ts";
export { DEFAULT_INSTALL_PATHS } from "./paths.ts";
export type { InstallPaths } from "./paths.ts";
/** The Machine layout units and install paths refer to (from lib/permissions). */

export { checkVersion } from "./release.ts";
export { INSTALL_OPTIONS, installReach, withReach } from "./grants.ts";
export type { InstallReach } from "./grants.ts";
export {
  publicKeyOf,
  RELEASE_PUBLIC_KEY,
  SIGNATURE_FILE,
  signSums,
  verifySumsSignature,
} from "./signature.ts";
export { checkAttemptId, STAGES } from "./attempt.ts";
export type { AttemptRecord, Outcome, ReadyEvidence, Stage } from "./attempt.ts";
export { installFrom, readAttempt, requestUpgrade, runWorker, startUpgradeWorker } from "./request.ts";
export { activeState, type SystemdDoor, type UpgradeWorker } from "./systemd.ts";
export { waitReady } from "./readiness.ts";
export type { LocalInstall, UpgradeAccepted, UpgradeRequest } from "./request.ts";
export type { PrerequisiteChoice } from "./prerequisites.ts";
export { displaySource, ProvisionError, provisionHost } from "./provision.ts";
export type {
  HostProbe,
  ProvisionOptions,
  ProvisionOutcome,
  ProvisionStage,
  TargetChoice,
} from "./provision.ts";
