/**
 * Command-line plumbing shared by `ployz` and `ployzd`: a command tree parsed with `node:util` parseArgs,
 * `--help` on every command, one-line errors with a code (exit 2 for usage mistakes), and `--json` errors.
 *
 * @module
 */

export type { Command, CommandContext, Io } from "./command.ts";
export { CliError, UsageError } from "./errors.ts";
export { dispatch } from "./dispatch.ts";
export { lazyCommand } from "./lazy.ts";
export { processIo } from "./io.ts";
export { PLOYZ_VERSION, versionInfo } from "./version.ts";
export type { VersionInfo } from "./version.ts";
