/**
 * Provisioning a host over SSH: the operator's side of first setup. It installs nothing itself; it gets the
 * release onto the host and runs the same install.sh → `ployzd install` there that `curl … | sh` runs.
 *
 * 1. probe: one SSH session reads the host's OS, architecture, uid (and passwordless sudo), the tools install.sh
 *    needs, and any installed `ployzd` with its `version --json`.
 * 2. acquire: on the operator's machine, the exact version is fetched from the release source (a channel is
 *    resolved here, once) with install.sh and SHA256SUMS, and checked against SHA256SUMS before anything is sent.
 * 3. transfer: one SSH session carries them as a ustar stream into a private directory on the host (mode 0700),
 *    laid out as a release source holding just that version.
 * 4. install: one SSH session runs install.sh against that directory as root (or `sudo -n`); it verifies the
 *    checksum again on the host and hands over to `ployzd install`, which verifies the daemon answers as the
 *    version. The directory is removed afterwards, whatever happened.
 *
 * The release travels through the operator's machine because the operator must reach the release source anyway
 * (to resolve a channel), while a fresh host may have no route to it (private networks, egress rules). The host
 * records the operator's source for later upgrades only when it is an http(s) URL (without credentials); a
 * directory on the operator's machine means nothing on the host, so none is recorded then.
 *
 * @module
 */

import { join } from "node:path";
import { type ErrorCode, isErrorCode, messageOf } from "../util/mod.ts";
import { parseSha256Sums, verifyArtifact } from "./checksums.ts";
import { releasePublicKey, SIGNATURE_FILE, verifySumsSignature } from "./signature.ts";
import { InstallError } from "./errors.ts";
import { type Bundle, bundleStream } from "./bundle.ts";
import type { PrerequisiteChoice } from "./prerequisites.ts";
import {
  artifactName,
  checkChannel,
  checkVersion,
  majorLine,
  openReleaseSource,
  resolveChannel,
  withoutCredentials,
} from "./release.ts";
import { type RemoteResult, type RemoteShell, shellQuote } from "./ssh.ts";

/** The stages of provisioning, as progress and refusals name them. */
export type ProvisionStage = "probe" | "acquire" | "transfer" | "install" | "serve_ready";

/** A refusal or failure of provisioning: the stage, a code, and what the host said last. */
export class ProvisionError extends InstallError {
  /** The stage that failed. */
  readonly stage: ProvisionStage;

  /** Makes an error naming `stage`; `hostTail` (the host's last output lines) is appended to the message. */
  constructor(stage: ProvisionStage, code: ErrorCode, message: string, hostTail?: string) {
    super(code, hostTail ? `${message}; the host said: ${hostTail}` : message, {
      stage,
      ...(hostTail ? { "host_output_tail": hostTail } : {}),
    });
    this.name = "ProvisionError";
    this.stage = stage;
  }
}

/** What the probe found on a host. */
export interface HostProbe {
  /** `uname -s`. */
  os: string;
  /** `uname -m`. */
  arch: string;
  /** The release target for `arch`; `undefined` when no release exists for it. */
  triple?: string;
  /** The SSH user's uid. */
  uid: number;
  /** Whether `sudo -n` works (asked only when not root). */
  sudo: boolean;
  /** Tools install.sh needs that the host lacks. */
  missing: string[];
  /** The installed ployzd, if any. */
  ployzd?: { path: string; version?: string };
}

const PROBE_SCRIPT = `
echo "os=$(uname -s)"
echo "arch=$(uname -m)"
echo "uid=$(id -u)"
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then echo "sudo=yes"; else echo "sudo=no"; fi
fi
for t in tar gzip sha256sum awk mktemp systemctl; do command -v "$t" >/dev/null 2>&1 || echo "missing=$t"; done
if p=$(command -v ployzd 2>/dev/null); then
  echo "ployzd=$p"
  v=$(ployzd version --json 2>/dev/null | tail -n 1) && echo "ployzd_version_json=$v"
fi
echo "probe=done"
`;

/** The release target a `uname -m` maps to, as install.sh maps it. */
export function tripleFor(arch: string): string | undefined {
  if (arch === "x86_64" || arch === "amd64") return "x86_64-unknown-linux-gnu";
  if (arch === "aarch64" || arch === "arm64") return "aarch64-unknown-linux-gnu";
  return undefined;
}

/** Parses the probe's `key=value` lines; `undefined` when they are incomplete. */
export function parseProbe(stdout: string): HostProbe | undefined {
  const values = new Map<string, string>();
  const missing: string[] = [];
  for (const line of stdout.split("\n")) {
    const at = line.indexOf("=");
    if (at <= 0) continue;
    const key = line.slice(0, at);
    const value = line.slice(at + 1).trim();
    if (key === "missing") missing.push(value);
    else values.set(key, value);
  }
  if (values.get("probe") !== "done" || !values.has("os") || !values.has("uid")) return undefined;
  const arch = values.get("arch") ?? "";
  const uid = Number(values.get("uid"));
  if (!Number.isInteger(uid)) return undefined;
  const probe: HostProbe = {
    os: values.get("os") ?? "",
    arch,
    triple: tripleFor(arch),
    uid,
    sudo: values.get("sudo") === "yes",
    missing,
  };
  const path = values.get("ployzd");
  if (path !== undefined) {
    let version: string | undefined;
    try {
      const parsed = JSON.parse(values.get("ployzd_version_json") ?? "");
      if (typeof parsed?.version === "string") version = parsed.version;
    } catch {
      // An installed ployzd that cannot say its version: reported as such.
    }
    probe.ployzd = version === undefined ? { path } : { path, version };
  }
  return probe;
}

/** The last lines of a remote program's output, for a one-line message. */
export function hostTail(result: Pick<RemoteResult, "stdout" | "stderr">, lines = 4): string {
  const all = `${result.stdout}\n${result.stderr}`.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  return all.slice(-lines).join(" | ").slice(0, 800);
}

/** Refuses a result that is ssh's own failure (exit 255) or a timeout, naming `stage`. */
function refuseTransport(
  shell: RemoteShell,
  stage: ProvisionStage,
  result: RemoteResult,
  what: string,
): void {
  if (result.timedOut) {
    throw new ProvisionError(stage, "unavailable", `Cannot provision "${shell.label}": ${what} timed out`);
  }
  if (result.code === 255) {
    const said = result.stderr.trim().split("\n").filter((l) => l.trim() !== "").at(-1) ?? "no message";
    throw new ProvisionError(stage, "unavailable", `Cannot reach "${shell.label}" over SSH: ${said}`);
  }
}

/** Stage 1: what the host is and whether ployzd is there. Refuses an unreachable host. */
export async function probeHost(shell: RemoteShell): Promise<HostProbe> {
  const result = await shell.run(PROBE_SCRIPT, { timeoutMs: 60_000 });
  refuseTransport(shell, "probe", result, "the probe");
  const probe = parseProbe(result.stdout);
  if (probe === undefined) {
    throw new ProvisionError(
      "probe",
      "unavailable",
      `Cannot provision "${shell.label}": the probe exited ${result.code} without an answer`,
      hostTail(result),
    );
  }
  return probe;
}

/** Refuses a host no Machine can run on: not Linux, or an architecture without releases. */
export function refuseUnsupported(label: string, probe: HostProbe): void {
  if (probe.os !== "Linux") {
    throw new ProvisionError(
      "probe",
      "unsupported",
      `Cannot provision "${label}": it runs "${probe.os}"; Machines run Linux`,
    );
  }
  if (probe.triple === undefined) {
    throw new ProvisionError(
      "probe",
      "unsupported",
      `Cannot provision "${label}": its architecture "${probe.arch}" has no release (x86_64 and aarch64 only)`,
    );
  }
}

/** Refuses a host this SSH user cannot install on: not root without passwordless sudo, or missing tools. */
export function refuseCannotInstall(label: string, probe: HostProbe): void {
  if (probe.uid !== 0 && !probe.sudo) {
    throw new ProvisionError(
      "probe",
      "invalid_argument",
      `Cannot provision "${label}": the SSH user is not root (uid ${probe.uid}) and "sudo -n" is not allowed; ` +
        `log in as root@HOST or as a user with passwordless sudo`,
    );
  }
  if (probe.missing.length > 0) {
    throw new ProvisionError(
      "probe",
      "unsupported",
      `Cannot provision "${label}": it lacks ${
        probe.missing.map((t) => `"${t}"`).join(", ")
      }, which installing needs (a systemd Linux with coreutils, tar, gzip and awk)`,
    );
  }
}

/** Which release to provision: an exact version, or a channel resolved once on the operator's machine. */
export interface TargetChoice {
  /** Exact version. */
  version?: string;
  /** Channel on `line`'s release line. */
  channel?: string;
  /** The version used when neither is given (the operator CLI's own). */
  fallback: string;
}

/** A release acquired on the operator's machine, laid out for transfer. */
export interface AcquiredRelease {
  /** Exact version. */
  version: string;
  /** The channel it was resolved from, if any. */
  channel?: string;
  /** The artifact's name. */
  artifact: string;
  /** Its verified SHA-256. */
  sha256: string;
  /** Local directory holding `install.sh` and `source/<version>/{SHA256SUMS,<artifact>}`. */
  dir: string;
}

/** Resolves the target (a channel once, against the source) and validates it. */
export async function resolveTarget(sourceBase: string, choice: TargetChoice): Promise<
  { version: string; channel?: string }
> {
  if (choice.version !== undefined && choice.channel !== undefined) {
    throw new ProvisionError("acquire", "invalid_argument", "Give --version or --channel, not both");
  }
  if (choice.version !== undefined) return { version: checkVersion(choice.version) };
  if (choice.channel !== undefined) {
    const channel = checkChannel(choice.channel);
    const version = await resolveChannel(
      openReleaseSource(sourceBase),
      majorLine(checkVersion(choice.fallback)),
      channel,
    );
    return { version, channel };
  }
  return { version: checkVersion(choice.fallback) };
}

/**
 * Stage 2: fetches install.sh (from the source's root, where `curl … | sh` gets it), SHA256SUMS and the artifact
 * into `dir`, and refuses an artifact whose SHA-256 SHA256SUMS does not list, before anything is sent.
 */
export async function acquireRelease(
  sourceBase: string,
  target: { version: string; channel?: string },
  triple: string,
  dir: string,
): Promise<AcquiredRelease> {
  const source = openReleaseSource(sourceBase);
  const artifact = artifactName(target.version, triple);
  const versionDir = join(dir, "source", target.version);
  await Deno.mkdir(versionDir, { recursive: true, mode: 0o700 });
  try {
    await source.download(["install.sh"], join(dir, "install.sh"));
    await source.download([target.version, "SHA256SUMS"], join(versionDir, "SHA256SUMS"));
    await source.download([target.version, SIGNATURE_FILE], join(versionDir, SIGNATURE_FILE));
    const sumsBytes = await Deno.readFile(join(versionDir, "SHA256SUMS"));
    verifySumsSignature(
      target.version,
      sumsBytes,
      await Deno.readTextFile(join(versionDir, SIGNATURE_FILE)),
      releasePublicKey(sourceBase),
    );
    const sums = parseSha256Sums(new TextDecoder().decode(sumsBytes));
    if (!sums.has(artifact)) {
      throw new InstallError("not_found", `Release ${target.version} has no "${artifact}" in its SHA256SUMS`);
    }
    await source.download(
      [target.version, artifact],
      join(versionDir, artifact),
      AbortSignal.timeout(900_000),
    );
    const sha256 = await verifyArtifact(join(versionDir, artifact), artifact, sums);
    return { ...target, artifact, sha256, dir };
  } catch (error) {
    if (error instanceof ProvisionError) throw error;
    if (error instanceof InstallError) {
      throw new ProvisionError(
        "acquire",
        error.code,
        `Cannot acquire release ${target.version}: ${redact(error.message)}`,
      );
    }
    throw new ProvisionError(
      "acquire",
      "unavailable",
      `Cannot acquire release ${target.version}: ${redact(messageOf(error))}`,
    );
  }
}

/** The ustar stream of an acquired release (install.sh and its one-version release source). */
export async function releaseBundle(release: AcquiredRelease): Promise<Bundle> {
  const v = release.version;
  return await bundleStream([
    { kind: "file", name: "install.sh", path: join(release.dir, "install.sh") },
    { kind: "dir", name: "source" },
    { kind: "dir", name: `source/${v}` },
    { kind: "file", name: `source/${v}/SHA256SUMS`, path: join(release.dir, "source", v, "SHA256SUMS") },
    {
      kind: "file",
      name: `source/${v}/${SIGNATURE_FILE}`,
      path: join(release.dir, "source", v, SIGNATURE_FILE),
    },
    {
      kind: "file",
      name: `source/${v}/${release.artifact}`,
      path: join(release.dir, "source", v, release.artifact),
    },
  ]);
}

const TRANSFER_SCRIPT = `
umask 077
d=$(mktemp -d "\${TMPDIR:-/tmp}/ployz-provision.XXXXXX") || { echo "cannot make a private directory" >&2; exit 70; }
if ! tar -xf - -C "$d" --no-same-owner; then rm -rf "$d"; echo "cannot unpack the transfer" >&2; exit 71; fi
echo "dir=$d"
`;

const REMOTE_DIR = /^\/[A-Za-z0-9._/-]+\/ployz-provision\.[A-Za-z0-9]+$/;

/** Stage 3: sends `bundle` in one SSH session; returns the private directory it landed in on the host. */
export async function transferBundle(shell: RemoteShell, bundle: Bundle): Promise<string> {
  const result = await shell.run(TRANSFER_SCRIPT, { timeoutMs: 1_800_000, stdin: bundle.stream });
  refuseTransport(shell, "transfer", result, "the transfer");
  const dir = /^dir=(.+)$/m.exec(result.stdout)?.[1]?.trim();
  if (result.code !== 0 || dir === undefined || !REMOTE_DIR.test(dir)) {
    throw new ProvisionError(
      "transfer",
      "unavailable",
      `Cannot transfer the release to "${shell.label}" (exit ${result.code} after ${bundle.sent()} of ${bundle.size} bytes)`,
      hostTail(result),
    );
  }
  if (bundle.sent() !== bundle.size) {
    throw new ProvisionError(
      "transfer",
      "internal",
      `Cannot transfer the release to "${shell.label}": sent ${bundle.sent()} of ${bundle.size} bytes`,
    );
  }
  return dir;
}

/** How install.sh runs on the host. */
export interface RemoteInstall {
  /** The directory {@link transferBundle} returned. */
  dir: string;
  /** The acquired release. */
  release: AcquiredRelease;
  /** The release source the host records for later upgrades; `none` records none. */
  recordSource: string;
  /** Host prerequisites choice. */
  prerequisites: PrerequisiteChoice;
  /** Run install.sh through `sudo -n` (the SSH user is not root). */
  sudo: boolean;
  /** A test release key for install.sh (`PLOYZ_RELEASE_PUBLIC_KEY`, base64); absent for real releases. */
  releaseKey?: string;
  /** Each line the host prints while installing. */
  onLine?: (line: string) => void;
}

/** The script that runs install.sh in `dir` and removes `dir` afterwards. Exported for its tests. */
export function installScript(install: Omit<RemoteInstall, "onLine">): string {
  if (!REMOTE_DIR.test(install.dir)) throw new TypeError(`Invalid remote directory "${install.dir}"`);
  const args = ["--version", checkVersion(install.release.version)];
  if (install.release.channel !== undefined) args.push("--channel", checkChannel(install.release.channel));
  args.push("--record-source", install.recordSource);
  if (install.prerequisites === "skip") args.push("--skip-prerequisites");
  if (install.prerequisites === "install") args.push("--install-prerequisites");
  const d = shellQuote(install.dir);
  let key = "";
  if (install.releaseKey !== undefined) {
    if (!/^[A-Za-z0-9+/]{43}=$/.test(install.releaseKey)) throw new TypeError("Invalid release public key");
    key = ` PLOYZ_RELEASE_PUBLIC_KEY=${install.releaseKey}`;
  }
  return [
    `d=${d}`,
    `trap 'rm -rf "$d"' EXIT`,
    "cd /",
    `${install.sudo ? "sudo -n " : ""}env PLOYZ_RELEASE_SOURCE="$d/source"${key} sh "$d/install.sh" ${
      args.map(shellQuote).join(" ")
    }`,
  ].join("\n");
}

/** Stage 4: runs install.sh on the host; refuses with the host's `error[code]` and output tail when it fails. */
export async function installOnHost(shell: RemoteShell, install: RemoteInstall): Promise<RemoteResult> {
  const result = await shell.run(installScript(install), {
    timeoutMs: 1_800_000,
    onLine: (line) => install.onLine?.(line),
  });
  refuseTransport(shell, "install", result, "the install");
  if (result.code !== 0) {
    const said = [...result.stderr.matchAll(/error\[([a-z_]+)\]/g)].at(-1)?.[1];
    const code = isErrorCode(said) ? said : undefined;
    throw new ProvisionError(
      "install",
      code ?? "unavailable",
      `Cannot install Ployz ${install.release.version} on "${shell.label}": install.sh exited ${result.code}`,
      hostTail(result),
    );
  }
  return result;
}

/** The source a provisioned host records: an http(s) URL without credentials, else `none`. */
export function recordableSource(sourceBase: string): string {
  if (!/^https?:\/\//.test(sourceBase)) return "none";
  const url = new URL(sourceBase);
  url.username = "";
  url.password = "";
  url.search = "";
  url.hash = "";
  return url.toString().replace(/\/+$/, "");
}

/** `message` without URL credentials (`//user:password@`), which a release source URL may carry. */
export function redact(message: string): string {
  return withoutCredentials(message);
}

/** `sourceBase` as messages show it: a URL without credentials or query. */
export function displaySource(sourceBase: string): string {
  return /^https?:\/\//.test(sourceBase) ? recordableSource(sourceBase) : sourceBase;
}

/** Options of {@link provisionHost}. */
export interface ProvisionOptions {
  /** The host. */
  shell: RemoteShell;
  /** Release source base (a directory or an http(s) URL), as reachable from this machine. */
  source: string;
  /** Which release. */
  target: TargetChoice;
  /** Host prerequisites choice, passed to `ployzd install`. */
  prerequisites: PrerequisiteChoice;
  /** False: never install (a host provisioned some other way); a missing ployzd is refused. */
  install: boolean;
  /** Progress lines, by stage. */
  progress?: (stage: ProvisionStage, line: string) => void;
}

/** What {@link provisionHost} observed and did. */
export interface ProvisionOutcome {
  /** `installed`; `already_installed` (same version, nothing done); `kept_installed` (another version, untouched). */
  action: "installed" | "already_installed" | "kept_installed";
  /** What the probe found. */
  probe: HostProbe;
  /** The release asked for (a channel resolved) when it was needed. */
  target?: { version: string; channel?: string };
  /** The ployzd version on the host now, as far as the probe or the install observed it. */
  version?: string;
  /** Whether commands on the host need `sudo -n` (the SSH user is not root). */
  sudo: boolean;
  /** Bytes sent in the transfer (0 when nothing was installed). */
  bytesSent: number;
  /** The artifact's verified SHA-256 (installed only). */
  sha256?: string;
  /** Milliseconds per stage that ran. */
  timings: Partial<Record<ProvisionStage, number>>;
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/**
 * Stages 1-4 (see the module comment): probes the host, and when it has no ployzd, acquires the release here,
 * sends it and runs install.sh there. A host running the requested version is left alone and says so; a host
 * running another one is left alone too (upgrades are `ployz machine upgrade`'s), and refused when the operator
 * asked for an explicit version or channel. Refusals are {@link ProvisionError}s naming the stage.
 */
export async function provisionHost(options: ProvisionOptions): Promise<ProvisionOutcome> {
  const { shell } = options;
  const say = options.progress ?? (() => {});
  const timings: ProvisionOutcome["timings"] = {};
  const timed = async <T>(stage: ProvisionStage, body: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    try {
      return await body();
    } finally {
      timings[stage] = Date.now() - started;
    }
  };
  const probe = await timed("probe", () => probeHost(shell));
  refuseUnsupported(shell.label, probe);
  const sudo = probe.uid !== 0 && probe.sudo;
  const who = probe.uid === 0 ? "root" : `uid ${probe.uid}${probe.sudo ? " with sudo" : ""}`;
  const explicit = options.target.version !== undefined || options.target.channel !== undefined;
  say(
    "probe",
    `"${shell.label}" is ${probe.os} ${probe.arch} (${probe.triple}), SSH user ${who}; ${
      probe.ployzd === undefined
        ? "no ployzd installed"
        : `ployzd ${probe.ployzd.version ?? "(version unknown)"} at ${probe.ployzd.path}`
    } (${timings.probe} ms)`,
  );

  if (probe.ployzd !== undefined) {
    const target = await resolveTarget(options.source, options.target).catch((error) => {
      if (error instanceof ProvisionError) throw error;
      throw new ProvisionError("probe", error.code ?? "unavailable", redact(String(error.message)));
    });
    const running = probe.ployzd.version;
    if (running === target.version) {
      say(
        "install",
        `skipped: ployzd ${running} is already installed on "${shell.label}", the version asked for`,
      );
      return { action: "already_installed", probe, target, version: running, sudo, bytesSent: 0, timings };
    }
    if (explicit) {
      throw new ProvisionError(
        "probe",
        "conflict",
        `Cannot provision "${shell.label}" with ${target.version}: it already runs ployzd ${
          running ?? "(version unknown)"
        }; "ployz machine upgrade" changes an installed Machine's version`,
      );
    }
    say(
      "install",
      `skipped: ployzd ${running ?? "(version unknown)"} is already installed on "${shell.label}" ` +
        `(this CLI is ${target.version}); left as it is: "ployz machine upgrade" changes versions`,
    );
    return { action: "kept_installed", probe, target, version: running, sudo, bytesSent: 0, timings };
  }

  if (!options.install) {
    throw new ProvisionError(
      "probe",
      "not_found",
      `Cannot add "${shell.label}": it has no ployzd, and installing was turned off (--no-install)`,
    );
  }
  refuseCannotInstall(shell.label, probe);
  const work = await Deno.makeTempDir({ prefix: "ployz-provision-" });
  try {
    const release = await timed("acquire", async () => {
      const target = await resolveTarget(options.source, options.target).catch((error) => {
        if (error instanceof ProvisionError) throw error;
        throw new ProvisionError("acquire", error.code ?? "unavailable", redact(String(error.message)));
      });
      return await acquireRelease(options.source, target, probe.triple!, work);
    });
    say(
      "acquire",
      `release ${release.version}${
        release.channel ? ` (channel ${release.channel})` : ""
      } for ${probe.triple} ` +
        `from "${
          displaySource(options.source)
        }": signature and checksum verified here (${timings.acquire} ms)`,
    );
    const bundle = await releaseBundle(release);
    const dir = await timed("transfer", () => transferBundle(shell, bundle));
    say(
      "transfer",
      `sent install.sh, SHA256SUMS and ${release.artifact} (${bundle.size} bytes, ${mib(bundle.size)}) ` +
        `to ${dir} in ${timings.transfer} ms`,
    );
    say("install", `running install.sh${sudo ? " with sudo -n" : ""} on "${shell.label}"; it verifies again`);
    const result = await timed("install", () =>
      installOnHost(shell, {
        dir,
        release,
        recordSource: recordableSource(options.source),
        prerequisites: options.prerequisites,
        sudo,
        releaseKey: Deno.env.get("PLOYZ_RELEASE_PUBLIC_KEY") || undefined,
        onLine: (line) => {
          if (line.trim() !== "") say("install", `  host: ${line.trim()}`);
        },
      }));
    const verified = /verified: the daemon answered as (\S+)/.exec(result.stdout)?.[1];
    say("install", `done in ${timings.install} ms`);
    return {
      action: "installed",
      probe,
      target: { version: release.version, ...(release.channel ? { channel: release.channel } : {}) },
      version: verified ?? release.version,
      sudo,
      bytesSent: bundle.sent(),
      sha256: release.sha256,
      timings,
    };
  } finally {
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
}
