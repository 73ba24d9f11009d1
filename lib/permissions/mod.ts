/**
 * Permission sets: the one source of truth for what each Ployz program may touch.
 *
 * deno.json's `permissions` block names a set per `ployzd` subcommand and for the CLI. From it come the
 * launchers' `-P=<set>`, `deno compile` flags, each systemd unit's `ExecStart`, the grants tests run under, and the
 * Worker a compiled `ployzd` narrows each subcommand into. A relocated {@link Layout} rewrites only the default
 * roots (`/var/lib/ployz`, `/run/ployz`, the Docker socket and data root).
 *
 * Daemon sets see only `PLOYZ_*` variables (`--ignore-env` hides the rest). The CLI set reads the whole
 * environment because Compose interpolation (`${VAR:-default}`) takes values from the operator's shell.
 *
 * @module
 */

export { permissionSet, permissionSetNames } from "./sets.ts";
export type {
  EnvPermission,
  PermissionSet,
  PermissionSetName,
  PermissionValue,
  ScopedPermission,
} from "./sets.ts";
export { DEFAULT_LAYOUT, layoutEnv, layoutFromEnv } from "./layout.ts";
export type { Layout } from "./layout.ts";
export { relocate } from "./relocate.ts";
export { permissionFlags, unionOf } from "./flags.ts";
export {
  configFlags,
  dropPreload,
  JEMALLOC_LIBRARIES,
  jemallocLibrary,
  runtimeEnvironment,
  runtimeFlags,
} from "./runtime_flags.ts";
export { DAEMON_BUNDLE, daemonEntry } from "./entry.ts";
export { daemonCommand, type DaemonCommandOptions } from "./launch.ts";
export { runInWorker } from "./worker.ts";
