/**
 * The Internal DNS process, kept running by the daemon but not hosted by it (docs/bets.md, bet 10): where systemd
 * runs, one of two alternating runtime units `/run/systemd/system/ployz-dns@{a,b}.service`, switched with overlap
 * onto new software ({@link systemdDnsRunner}); elsewhere (tests, the lab) the daemon spawns `ployzd dns` itself.
 *
 * @module
 */

import { join } from "node:path";
import { renderRuntimeUnit, type UnitFile, type UnitOptions } from "../installer/machine/mod.ts";
import { pollUntil, sleep, writeFileAtomic } from "../util/mod.ts";

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

/**
 * The two runtime units Internal DNS alternates between. A restart onto new software starts the idle one beside
 * the running one (both bind port 53: UDP SO_REUSEADDR, TCP SO_REUSEPORT), waits until it serves, and only then
 * stops the old one, which drains what it queued: systemd never sees a moment with no DNS process, so no query
 * is refused. (Systemd's fd store or a `.socket` unit would need Deno to adopt an inherited UDP socket, which
 * neither `Deno.listenDatagram` nor `node:dgram` can.)
 */
export const DNS_UNITS = ["ployz-dns@a.service", "ployz-dns@b.service"] as const;

/** The single unit of releases before the pair: replaced like an old slot, then removed. */
export const LEGACY_DNS_UNIT = "ployz-dns.service";

/** How long a new DNS process has to say it serves before the switch is abandoned and the old one kept. */
export const DNS_SERVING_TIMEOUT_MS = 60_000;

/**
 * How long a DNS switch waits for one already under way (its own bound is {@link DNS_SERVING_TIMEOUT_MS} plus the
 * stops) before it gives up and leaves DNS as it is; the daemon kills the door after 120 s.
 */
export const DNS_SWITCH_WAIT_MS = 90_000;

/** What the DNS switch asks of systemd; the real one runs `systemctl` and `journalctl`. */
export interface DnsSystemd {
  /** Runs `systemctl args`; throws when it fails. */
  systemctl(args: string[]): Promise<void>;
  /** The unit's ActiveState (`inactive` for an unknown unit). */
  activeState(unit: string): Promise<string>;
  /** Whether the unit's current run said it serves (`yes`), is still starting (`no`) or ended (`failed`). */
  serving(unit: string): Promise<"yes" | "no" | "failed">;
  /** Waits a little between two looks at a starting unit. */
  pause(): Promise<void>;
}

const LIVE_STATES = new Set(["active", "activating", "reloading", "deactivating"]);

/**
 * `ployzd dns` under the pair of runtime units {@link DNS_UNITS}. When a live slot already runs exactly the unit
 * the current release renders, ensuring only stops any other (a half-done earlier switch, or the
 * {@link LEGACY_DNS_UNIT}). Otherwise the idle slot gets the new unit and starts; its `ExecStartPre` runs the new
 * binary's `dns --probe`, so software that cannot serve the current spec never starts. Once its "Serving spec"
 * line is in the journal the old units stop and their files go; if it fails or does not serve within
 * {@link DNS_SERVING_TIMEOUT_MS}, it is stopped, the old one keeps serving, and ensure throws.
 *
 * One switch at a time: ensure holds an exclusive flock on `unitDir` from its first look at the slots to its
 * last stop, so a second switch (two daemons starting across an upgrade, a retry) waits, then sees the first's
 * result; after `lockWaitMs` it throws and changes nothing.
 */
export function systemdDnsRunner(
  options: UnitOptions,
  unitDir: string = RUNTIME_UNIT_DIR,
  systemd: DnsSystemd = realDnsSystemd(),
  servingTimeoutMs: number = DNS_SERVING_TIMEOUT_MS,
  lockWaitMs: number = DNS_SWITCH_WAIT_MS,
): DnsRunner {
  return {
    async ensure(): Promise<void> {
      await using _switching = await holdSwitchLock(unitDir, lockWaitMs);
      const text = renderRuntimeUnit("dns", options).text;
      const units = [...DNS_UNITS, LEGACY_DNS_UNIT];
      const states = await Promise.all(units.map((u) => systemd.activeState(u)));
      const live = units.filter((_, i) => LIVE_STATES.has(states[i]));
      const onDisk = (unit: string): Promise<string | undefined> =>
        Deno.readTextFile(join(unitDir, unit)).catch(() => undefined);
      let current: string | undefined;
      for (const unit of DNS_UNITS) {
        if (live.includes(unit) && (await onDisk(unit)) === text) current = unit;
      }
      if (current !== undefined) {
        await retire(live.filter((u) => u !== current));
        return;
      }
      // Both slots live on other software: the second gives way first, the first keeps answering meanwhile.
      let target: string | undefined = DNS_UNITS.find((u) => !live.includes(u));
      if (target === undefined) {
        target = DNS_UNITS[1];
        await retire([target]);
        live.splice(live.indexOf(target), 1);
      }
      await writeFileAtomic(join(unitDir, target), text);
      await systemd.systemctl(["daemon-reload"]);
      await systemd.systemctl(["reset-failed", target]).catch(() => {});
      try {
        await systemd.systemctl(["start", target]);
        await waitServing(target);
      } catch (error) {
        await systemd.systemctl(["stop", target]).catch(() => {});
        throw error;
      }
      await retire(live);
    },
    async close(): Promise<void> {},
  };

  async function waitServing(unit: string): Promise<void> {
    const deadline = Date.now() + servingTimeoutMs;
    while (true) {
      const said = await systemd.serving(unit);
      if (said === "yes") return;
      if (said === "failed") throw new Error(`${unit} ended before it served; the running DNS is kept`);
      if (Date.now() > deadline) {
        throw new Error(`${unit} did not serve within ${servingTimeoutMs / 1000} s; the running DNS is kept`);
      }
      await systemd.pause();
    }
  }

  async function retire(units: string[]): Promise<void> {
    if (units.length === 0) return;
    for (const unit of units) await systemd.systemctl(["stop", unit]);
    for (const unit of units) await Deno.remove(join(unitDir, unit)).catch(() => {});
    await systemd.systemctl(["daemon-reload"]);
  }
}

/**
 * Takes the DNS switch lock: an exclusive flock on the unit directory itself, so there is no file to create,
 * grant or clean up, and the lock goes with its holder however that ends (even SIGKILL from the daemon's bound on
 * the door). Polls, because a blocking flock could not be given up after `waitMs`.
 */
async function holdSwitchLock(unitDir: string, waitMs: number): Promise<AsyncDisposable> {
  const dir = await Deno.open(unitDir, { read: true });
  try {
    const held = await pollUntil(() => dir.tryLock(true), { timeoutMs: waitMs, intervalMs: 200 });
    if (!held) {
      throw new Error(
        `Another DNS switch still holds ${unitDir} after ${
          Math.round(waitMs / 1000)
        } s; the running DNS is kept`,
      );
    }
  } catch (error) {
    dir.close();
    throw error;
  }
  return { [Symbol.asyncDispose]: () => Promise.resolve(dir.close()) };
}

/** {@link DnsSystemd} through `systemctl` and `journalctl`, each bounded. */
export function realDnsSystemd(): DnsSystemd {
  return {
    systemctl: (args) => systemctl(args).then(() => {}),
    async activeState(unit: string): Promise<string> {
      return (await systemctl(["show", "--property=ActiveState", "--value", unit]).catch(() => "")).trim() ||
        "inactive";
    },
    async serving(unit: string): Promise<"yes" | "no" | "failed"> {
      const state = (await systemctl(["show", "--property=ActiveState", "--value", unit])).trim();
      if (state !== "active" && state !== "activating") return "failed";
      const invocation = (await systemctl(["show", "--property=InvocationID", "--value", unit])).trim();
      if (!/^[0-9a-f]{32}$/.test(invocation)) return "no";
      const journal = await run("journalctl", [
        "--no-pager",
        "--output=cat",
        `_SYSTEMD_INVOCATION_ID=${invocation}`,
      ]);
      return /Serving spec/.test(journal) ? "yes" : "no";
    },
    pause: () => sleep(100),
  };
}

function systemctl(args: string[]): Promise<string> {
  return run("systemctl", args);
}

/** Runs a systemd tool for at most 90 s (a stop waits for a draining DNS process); throws when it fails. */
async function run(program: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(program, {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(90_000),
  }).output();
  if (!out.success) {
    throw new Error(`${program} ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
  return new TextDecoder().decode(out.stdout);
}
