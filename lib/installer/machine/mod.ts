/**
 * The part of the installer a running Machine's daemon needs at all times: where the installation lives, the
 * runtime units it renders for `ployzd dns` and `ployzd observe`, and whether an upgrade attempt is running (the
 * mutation interlock asks before every mutation).
 *
 * Why a narrower door than `lib/installer/mod.ts`: that one also carries staging, signature checks, activation and
 * provisioning over SSH, which the daemon runs only when an upgrade is asked (it imports `lib/installer/mod.ts`
 * then, on first use). `tests/module_graph_test.ts` holds `ployzd serve` to this door.
 *
 * @module
 */

export { renderRuntimeUnit } from "../units.ts";
export type { UnitFile, UnitOptions, UnitSubcommand } from "../units.ts";
export { DEFAULT_INSTALL_PATHS } from "../paths.ts";
export type { InstallPaths } from "../paths.ts";
export type { AttemptRecord } from "../attempt.ts";
export type { SystemdDoor } from "../systemd.ts";
export { runningAttempt } from "../running.ts";
