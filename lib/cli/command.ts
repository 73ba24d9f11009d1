import type { ParseArgsOptionsConfig } from "node:util";

/** Where a command writes; tests pass buffers, programs pass the process's streams. */
export interface Io {
  /** Writes to standard output. */
  out(text: string): void;
  /** Writes to standard error. */
  err(text: string): void;
}

/** What a command's `run` receives once its arguments parsed. */
export interface CommandContext {
  /** The full command path, e.g. `ployz machine init`. */
  path: string;
  /** Parsed option values. */
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  /** Positional arguments. */
  positionals: string[];
  /** Where to write. */
  io: Io;
}

/**
 * One command of a program. A group has `subcommands` and no `run`; a leaf has `run`. `options` uses
 * `node:util` parseArgs syntax; `--help` is added to every command.
 */
export interface Command {
  /** The word that selects the command. */
  name: string;
  /** One line for the parent's command list. */
  summary: string;
  /** Argument synopsis after the command path, e.g. `[--json]`. */
  usage?: string;
  /** Longer text printed under the usage line by `--help`: one string, or its lines. */
  description?: string | string[];
  /** Options in `node:util` parseArgs syntax. */
  options?: ParseArgsOptionsConfig;
  /** How many positionals the command takes: `[min, max]`; default none. */
  positionals?: [number, number];
  /** The commands of a group. */
  subcommands?: Command[];
  /** Runs a leaf command; resolves with the exit code. */
  run?(ctx: CommandContext): Promise<number>;
  /**
   * Loads the whole command on demand. A parent lists a stub (`name`, `summary`, `load`) so that a process loads
   * only the command it runs; see {@link lazyCommand}.
   */
  load?(): Promise<Command>;
}
