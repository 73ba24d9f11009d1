/**
 * The daemon's only way to systemd: `ployz-systemd` (`bin/ployz-systemd` of the current release, `ployzd systemd` under its own
 * narrow permission set, with a clean environment). The serve set may run that one program and neither
 * `systemctl` nor `systemd-run`, nor write any unit file, so a compromised daemon can start nothing but what the
 * door accepts: the DNS and Observe Store runtime units rendered by the door itself, and upgrade workers named
 * `ployz-upgrade-<attempt id>` running the current release's own installer.
 *
 * @module
 */

import type { SystemdDoor } from "../installer/machine/mod.ts";

/**
 * The door, by the name the serve set grants: the installer links `<bin dir>/ployz-systemd` to the current
 * release's `bin/ployz-systemd`, and deno resolves the name on PATH once, when the daemon starts.
 */
export const SYSTEMD_DOOR = "ployz-systemd";

/** Runs the door with `args`; refuses with its last stderr line when it fails. */
export async function throughDoor(door: string, args: string[], timeoutMs = 120_000): Promise<string> {
  const child = new Deno.Command(door, { args, stdin: "null", stdout: "piped", stderr: "piped" }).spawn();
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already exited.
    }
  }, timeoutMs);
  try {
    const out = await child.output();
    const text = new TextDecoder();
    if (!out.success) {
      const why = text.decode(out.stderr).trim().split("\n").at(-1) || `exit ${out.code}`;
      throw new Error(`ployz-systemd ${args.join(" ")} failed: ${why}`);
    }
    return text.decode(out.stdout);
  } finally {
    clearTimeout(timer);
  }
}

/** Upgrade workers and unit states through the door. */
export function doorSystemd(door: string = SYSTEMD_DOOR): SystemdDoor {
  return {
    async activeState(unit: string): Promise<string> {
      try {
        return (await throughDoor(door, ["active", unit], 30_000)).trim() || "inactive";
      } catch {
        return "unknown";
      }
    },
    async startWorker(worker): Promise<void> {
      const args = ["run-worker", worker.id, worker.target];
      if (worker.readyTimeoutSeconds !== undefined) {
        args.push("--ready-timeout", String(worker.readyTimeoutSeconds));
      }
      await throughDoor(door, args);
    },
  };
}

/** A runtime unit (`dns` or `observe`) kept running through the door; what the daemon holds of it is nothing. */
export function doorRunner(which: "dns" | "observe", door: string = SYSTEMD_DOOR): {
  ensure(): Promise<void>;
  close(): Promise<void>;
} {
  return {
    async ensure(): Promise<void> {
      await throughDoor(door, ["ensure", which]);
    },
    async close(): Promise<void> {},
  };
}
