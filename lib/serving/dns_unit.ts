/**
 * The Internal DNS process, kept running by the daemon but not hosted by it (docs/bets.md, bet 10): where systemd
 * runs, a runtime unit in `/run/systemd/system/ployz-dns.service` (written only when its text changed, then
 * started); elsewhere (tests, the lab) the daemon spawns `ployzd dns` itself.
 *
 * @module
 */

import { join } from "node:path";
import { renderRuntimeUnit, type UnitFile, type UnitOptions } from "../installer/machine/mod.ts";
import { writeFileAtomic } from "../util/mod.ts";

/** Where runtime units live; gone at reboot, as dns.json is. */
export const RUNTIME_UNIT_DIR = "/run/systemd/system";

/** How the DNS process is kept running. */
export interface DnsRunner {
  /** Makes sure it runs with the current software; idempotent. */
  ensure(): Promise<void>;
  /** Releases what this runner holds in the daemon (a spawned child); a systemd unit keeps running. */
  close(): Promise<void>;
}

/** Set to `systemd` by the installed `ployz-serve` unit: systemd keeps the daemon's runtime units. */
export const RUNTIME_UNITS_ENV = "PLOYZ_RUNTIME_UNITS";

/**
 * Whether the DNS and Observe Store processes run as systemd runtime units (through the ployz-systemd door)
 * rather than as the daemon's children: true when the daemon's own unit says so ({@linkcode RUNTIME_UNITS_ENV}).
 * Said by the unit rather than probed, because the serve set may not read `/run/systemd/system` (so a probe
 * always answered no there), and a daemon started by hand or in the lab on a systemd host must still keep its
 * children itself.
 */
export function systemdRuns(
  get: (name: string) => string | undefined = (name) => Deno.env.get(name),
): boolean {
  return get(RUNTIME_UNITS_ENV) === "systemd";
}

/**
 * Keeps a runtime unit running under systemd: writes the unit `render` gives when its text changed and reloads
 * systemd, then restarts it when `restart(current, next)` says so (`current` is the text on disk, if any), else
 * starts it (a no-op when it is active). Never stops it.
 */
export function systemdUnitRunner(
  render: () => UnitFile,
  restart: (current: string | undefined, next: string) => boolean,
  unitDir: string = RUNTIME_UNIT_DIR,
): DnsRunner {
  return {
    async ensure(): Promise<void> {
      const unit = render();
      const path = join(unitDir, unit.name);
      const current = await Deno.readTextFile(path).catch(() => undefined);
      if (current !== unit.text) {
        await writeFileAtomic(path, unit.text);
        await systemctl(["daemon-reload"]);
      }
      await systemctl([restart(current, unit.text) ? "restart" : "start", unit.name]);
    },
    async close(): Promise<void> {},
  };
}

/** `ployzd dns` under its runtime unit, restarted whenever the unit's text changed. */
export function systemdDnsRunner(options: UnitOptions, unitDir: string = RUNTIME_UNIT_DIR): DnsRunner {
  return systemdUnitRunner(
    () => renderRuntimeUnit("dns", options),
    (current, next) => current !== next,
    unitDir,
  );
}

async function systemctl(args: string[]): Promise<void> {
  const out = await new Deno.Command("systemctl", { args, stdout: "null", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`systemctl ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
}
