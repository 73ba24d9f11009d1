/**
 * The Observe Store runs beside the daemon, not inside it (docs/bets.md, bet 10): `ployzd serve` starts it on every
 * start, whatever the Machine's phase, and restarts it when it runs other software; only uninstall stops it, since
 * it holds no Membership state. Where systemd runs, it is the runtime unit `/run/systemd/system/ployz-observe.service`
 * (written only when its text changed); elsewhere (tests, the lab) the daemon spawns `ployzd observe` as a child,
 * which ends with the daemon. A failure to start it is logged once and reported by status, never fatal.
 *
 * @module
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { renderRuntimeUnit, type UnitOptions } from "../installer/machine/mod.ts";
import { daemonCommand, type Layout, layoutEnv } from "../permissions/mod.ts";
import { RUNTIME_UNIT_DIR, systemdRuns, systemdUnitRunner } from "../serving/mod.ts";
import { doorRunner } from "./systemd_door.ts";
import { messageOf, socketAnswers, stopChild } from "../util/mod.ts";

/** How the Observe Store process is kept running. */
export interface ObserveRunner {
  /** Makes sure it runs with the current software; idempotent. */
  ensure(): Promise<void>;
  /** Releases what this runner holds in the daemon (a spawned child); a systemd unit keeps running. */
  close(): Promise<void>;
}

/** What status reports of the Observe Store: whether observe.sock answered just now, and why not. */
export interface ObserveState {
  /** True when observe.sock accepted a connection during this call. */
  running: boolean;
  /** Why it is not running (the start failure, else the connection failure). */
  error?: string;
}

/** The started Observe Store as the daemon holds it. */
export interface ObserveRuntime {
  /** Resolves once the start attempt finished (successfully or not). */
  readonly started: Promise<void>;
  /** Probes observe.sock now. */
  state(): Promise<ObserveState>;
  /** Releases a spawned child; a systemd unit keeps running. */
  close(): Promise<void>;
}

function execStart(text: string | undefined): string | undefined {
  return text?.split("\n").find((line) => line.startsWith("ExecStart="));
}

/**
 * `ployzd observe` under its runtime unit: restarted only when its `ExecStart` (the software it runs) changed, so
 * a daemon restart does not interrupt ingestion.
 */
export function systemdObserveRunner(
  options: UnitOptions,
  unitDir: string = RUNTIME_UNIT_DIR,
): ObserveRunner {
  return systemdUnitRunner(
    () => renderRuntimeUnit("observe", options),
    (current, next) => current !== undefined && execStart(current) !== execStart(next),
    unitDir,
  );
}

/**
 * Spawns `argv` (e.g. `deno run -P=observe cmd/ployzd.ts observe`) once and keeps it until
 * {@link ObserveRunner.close}; when `socketPath` already answers, another Observe Store serves and none is spawned.
 */
export function processObserveRunner(
  argv: string[],
  env: Record<string, string>,
  socketPath: string,
): ObserveRunner {
  let child: Deno.ChildProcess | undefined;
  const pumps: Promise<void>[] = [];
  return {
    async ensure(): Promise<void> {
      if (child !== undefined || await socketAnswers(socketPath)) return;
      // Piped through this process rather than inherited, so a child left behind by a killed daemon does not
      // hold the daemon's stderr open.
      const spawned = new Deno.Command(argv[0], {
        args: argv.slice(1),
        env,
        stdin: "null",
        stdout: "null",
        stderr: "piped",
      }).spawn();
      child = spawned;
      pumps.push(spawned.stderr.pipeTo(Deno.stderr.writable, { preventClose: true }).catch(() => {}));
      spawned.status.then(() => {
        if (child === spawned) child = undefined;
      });
    },
    async close(): Promise<void> {
      const running = child;
      if (running !== undefined) await stopChild(running);
      await Promise.all(pumps);
    },
  };
}

// The tree this code runs from, whose deno.json the child runs under: source and bundle chunks alike sit two
// directories below it.
const TREE = fileURLToPath(new URL("../../", import.meta.url));

/**
 * `ployzd observe` under a runtime unit when systemd is PID 1, else as a child of this process run by the same deno
 * under the relocated `observe` permission set (the daemon then needs run permission for its own deno binary).
 */
export async function defaultObserveRunner(layout: Layout): Promise<ObserveRunner> {
  // Under systemd the runtime unit is written and started by the ployz-systemd door, not by the daemon.
  if (await systemdRuns()) return doorRunner("observe");
  const env: Record<string, string> = { ...layoutEnv(layout), NO_COLOR: "1" };
  // The budget and the proc/cgroup roots, when the daemon was given them.
  for (
    const name of [
      "PLOYZ_OBSERVE_PROC_ROOT",
      "PLOYZ_OBSERVE_CGROUP_ROOT",
      "PLOYZ_OBSERVE_MAX_BYTES",
      "PLOYZ_OBSERVE_MIN_FREE_BYTES",
    ]
  ) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  return processObserveRunner(
    daemonCommand("observe", { config: ["--config", join(TREE, "deno.json")], layout }),
    env,
    join(layout.runDir, "observe.sock"),
  );
}

/** Starts the Observe Store in the background; a failure is logged once and kept for {@link ObserveRuntime.state}. */
export function startObserveRuntime(options: {
  layout: Layout;
  runner?: ObserveRunner;
  log?: (line: string) => void;
}): ObserveRuntime {
  const { layout } = options;
  const log = options.log ?? (() => {});
  const socketPath = join(layout.runDir, "observe.sock");
  let runner: ObserveRunner | undefined;
  let failure: string | undefined;
  const started = (async () => {
    try {
      // The observe set may write only inside its own directory, so its parent's child is made here.
      await Deno.mkdir(join(layout.dataDir, "observe"), { recursive: true });
      runner = options.runner ?? await defaultObserveRunner(layout);
      await runner.ensure();
    } catch (error) {
      failure = `cannot start the Observe Store: ${messageOf(error)}`;
      log(`observe: ${failure}`);
    }
  })();
  return {
    started,
    async state(): Promise<ObserveState> {
      if (await socketAnswers(socketPath)) return { running: true };
      return { running: false, error: failure ?? `"${socketPath}" does not answer` };
    },
    async close(): Promise<void> {
      await started;
      await runner?.close();
    },
  };
}
