// The systemd calls the installer makes: daemon-reload, restarting only what must restart, a unit's state, and
// starting an attempt's worker as its own transient unit.
import { InstallError } from "./errors.ts";
import { execBounded, tail } from "./exec.ts";

const SYSTEMCTL_TIMEOUT_MS = 90_000;

/** Runs `systemctl args`; refuses with its stderr when it fails. */
export async function systemctl(args: string[], timeoutMs = SYSTEMCTL_TIMEOUT_MS): Promise<string> {
  const result = await execBounded("systemctl", args, { timeoutMs });
  if (result.code !== 0) {
    const why = result.timedOut
      ? `no answer within ${timeoutMs / 1000} s`
      : tail(result.stderr || result.stdout);
    throw new InstallError("unavailable", `Cannot run "systemctl ${args.join(" ")}": ${why}`);
  }
  return result.stdout;
}

/** A unit's ActiveState (`active`, `activating`, `inactive`, `failed`…); `inactive` for an unknown unit. */
export async function activeState(unit: string): Promise<string> {
  const result = await execBounded("systemctl", ["show", "--property=ActiveState", "--value", unit], {
    timeoutMs: 30_000,
  });
  return result.code === 0 ? result.stdout.trim() || "inactive" : "unknown";
}

/** How to start an attempt's worker. */
export interface TransientUnit {
  /** Unit name, e.g. `ployz-upgrade-<id>.service`. */
  unit: string;
  /** Program and arguments. */
  argv: string[];
  /** Environment the worker gets. */
  env: Record<string, string>;
  /** systemd stops the worker after this many seconds. */
  runtimeMaxSec: number;
  /** One line for `systemctl status`. */
  description: string;
}

/**
 * Starts `argv` as a transient service, independent of the caller's process group and service: a restart of
 * the daemon or a lost client connection does not stop it. `--collect` unloads it once it ends; journald keeps
 * its output. Without
 * `--no-block`, this returns once the unit has started, so an attempt is never "accepted" without its worker.
 */
export async function startTransient(spec: TransientUnit): Promise<void> {
  const args = [
    `--unit=${spec.unit}`,
    "--collect",
    `--description=${spec.description}`,
    `--property=RuntimeMaxSec=${spec.runtimeMaxSec}`,
    "--property=KillMode=mixed",
    ...Object.entries(spec.env).map(([k, v]) => `--setenv=${k}=${v}`),
    "--",
    ...spec.argv,
  ];
  const result = await execBounded("systemd-run", args, { timeoutMs: 60_000 });
  if (result.code !== 0) {
    throw new InstallError(
      "unavailable",
      `Cannot start the upgrade worker "${spec.unit}" with systemd-run: ${
        tail(result.stderr || result.stdout)
      }`,
    );
  }
}

/**
 * How a process reaches systemd for upgrades: the installer directly, the daemon only through the `ployz-systemd`
 * door (`bin/ployz-systemd`, `ployzd systemd`), which starts nothing but `ployz-upgrade-<attempt id>` workers
 * running the current release's own `ployzd install --attempt <id>`.
 */
export interface SystemdDoor {
  /** The ActiveState of a Ployz unit; `inactive` for an unknown one. */
  activeState(unit: string): Promise<string>;
  /** Starts the worker of attempt `id` (to `target`) as `ployz-upgrade-<id>`. */
  startWorker(worker: UpgradeWorker): Promise<void>;
}

/** An upgrade worker to start. */
export interface UpgradeWorker {
  /** The attempt id. */
  id: string;
  /** The version it installs, for the unit's description. */
  target: string;
  /** Seconds the new daemon has to answer as the target version. */
  readyTimeoutSeconds?: number;
}
