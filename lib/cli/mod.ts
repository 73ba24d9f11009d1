/**
 * Command-line plumbing shared by `ployz` and `ployzd`: a command tree parsed with `node:util` parseArgs,
 * `--help` on every command, one-line errors with a code (exit 2 for usage mistakes), and `--json` errors.
 *
 * @module
 */

export type { Command, CommandContext, Io } from "./command.ts";
export { CliError, UsageError } from "./errors.ts";
export { dispatch, resolveCommand } from "./dispatch.ts";
export { lazyCommand } from "./lazy.ts";
export type { Resolved } from "./dispatch.ts";
export { usageText } from "./usage.ts";
export { bufferIo, processIo } from "./io.ts";
export { notBuilt } from "./not_built.ts";
export { PLOYZ_VERSION, versionInfo } from "./version.ts";
export type { VersionInfo } from "./version.ts";
