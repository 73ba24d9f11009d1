import { join } from "node:path";
import { CliError, type Command } from "../../lib/cli/mod.ts";
import { systemdObserveRunner } from "../../lib/daemon/mod.ts";
import {
  activeState,
  checkAttemptId,
  checkVersion,
  DEFAULT_INSTALL_PATHS,
  type InstallPaths,
  startUpgradeWorker,
} from "../../lib/installer/mod.ts";
import { layoutFromEnv } from "../../lib/permissions/mod.ts";
import { systemdDnsRunner } from "../../lib/serving/mod.ts";

const UNIT = /^ployz-(upgrade-[a-z0-9]{6,32}|serve|dns|dns@[ab]|observe)\.service$/;

function refuse(message: string): CliError {
  return new CliError("invalid_argument", message);
}

/**
 * `ployzd systemd`: the door from `ployzd serve` to systemd, run through `bin/ployz-systemd` under its own
 * permission set. It accepts three verbs and renders everything it hands systemd itself, so the daemon (which may
 * run only this door) chooses no unit text, no unit name outside Ployz's and no command line.
 */
export const systemdDoor: Command = {
  name: "systemd",
  summary: "The daemon's door to systemd: Ployz runtime units and upgrade workers only",
  usage: "ensure dns|observe | active UNIT | run-worker ATTEMPT VERSION [--ready-timeout SECONDS]",
  description: [
    "ensure dns|observe: writes the runtime unit of ployzd dns or ployzd observe for this release (only when its",
    "text changed), reloads systemd and starts (or restarts) it. DNS moves to new software by starting the idle",
    "one of ployz-dns@a and ployz-dns@b, waiting until it serves, then stopping the old one; one switch at a time.",
    "active UNIT: prints the ActiveState of ployz-serve, ployz-dns@a|b (or the older ployz-dns), ployz-observe",
    "or ployz-upgrade-<id>.",
    "run-worker ATTEMPT VERSION: starts ployz-upgrade-<ATTEMPT>, running the current release's own",
    "ployzd install --attempt ATTEMPT.",
  ],
  positionals: [2, 3],
  options: { "ready-timeout": { type: "string" } },
  async run({ positionals, values, io }): Promise<number> {
    const layout = layoutFromEnv((k) => Deno.env.get(k));
    const paths: InstallPaths = {
      ...DEFAULT_INSTALL_PATHS,
      layout: { ...DEFAULT_INSTALL_PATHS.layout, ...layout },
    };
    const [verb, ...rest] = positionals;
    if (verb === "ensure" && rest.length === 1) {
      const current = join(paths.prefix, "current");
      // DNS names its release itself (this deno, the release's real tree), so the old process keeps its own
      // tree while the new one starts beside it.
      if (rest[0] === "dns") {
        await systemdDnsRunner({ deno: Deno.execPath(), appDir: await Deno.realPath(current), layout })
          .ensure();
      } else if (rest[0] === "observe") {
        // As the installer writes it: deno and tree through `current`, naming no release, so an upgrade's own
        // restart of the unit moves it onto the new release and the new daemon finds nothing to change. (This
        // deno's path names a release: the unit then changed at every upgrade, a second restart.)
        await systemdObserveRunner({ deno: join(current, "deno"), appDir: current, layout }).ensure();
      } else throw refuse(`Invalid runtime unit "${rest[0]}": expected dns or observe`);
      return 0;
    }
    if (verb === "active" && rest.length === 1) {
      if (!UNIT.test(rest[0])) throw refuse(`Invalid unit "${rest[0]}": not a Ployz unit`);
      io.out(`${await activeState(rest[0])}\n`);
      return 0;
    }
    if (verb === "run-worker" && rest.length === 2) {
      const paths: InstallPaths = {
        ...DEFAULT_INSTALL_PATHS,
        layout: { ...DEFAULT_INSTALL_PATHS.layout, ...layout },
      };
      const timeout = values["ready-timeout"];
      const readyTimeoutSeconds = timeout === undefined ? undefined : Number(timeout);
      if (
        readyTimeoutSeconds !== undefined &&
        !(Number.isInteger(readyTimeoutSeconds) && readyTimeoutSeconds > 0)
      ) {
        throw refuse(`Invalid --ready-timeout "${timeout}": expected whole seconds`);
      }
      await startUpgradeWorker(paths, {
        id: checkAttemptId(rest[0]),
        target: checkVersion(rest[1]),
        readyTimeoutSeconds,
      });
      return 0;
    }
    throw refuse(`Invalid request "${positionals.join(" ")}": expected ${systemdDoor.usage}`);
  },
};
