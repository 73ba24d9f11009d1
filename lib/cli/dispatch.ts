import { parseArgs } from "node:util";
import type { Command, Io } from "./command.ts";
import { CliError, UsageError } from "./errors.ts";
import { loadCommand } from "./lazy.ts";
import { usageText } from "./usage.ts";
import { messageOf } from "../util/mod.ts";

/** The command a command line resolved to, before its own options are parsed. */
export interface Resolved {
  /** The command path, e.g. `ployz machine init`. */
  path: string;
  /** The resolved command. */
  command: Command;
  /** The arguments after the command path. */
  rest: string[];
}

/**
 * Walks `argv` down the command tree of `program`; stops at the first leaf or at a non-command word. Loads each
 * lazily defined command it passes through, and only those.
 */
export async function resolveCommand(program: Command, argv: string[]): Promise<Resolved> {
  let command = await loadCommand(program, program.name);
  let path = program.name;
  let i = 0;
  while (command.subcommands && i < argv.length && !argv[i].startsWith("-")) {
    const word = argv[i];
    const next = command.subcommands.find((c) => c.name === word);
    if (!next) {
      throw new UsageAt(path, command, `Unknown command "${word}" for "${path}"`);
    }
    path = `${path} ${word}`;
    command = await loadCommand(next, path);
    i++;
  }
  return { path, command, rest: argv.slice(i) };
}

/** A usage mistake that knows which command's usage to print. */
class UsageAt extends UsageError {
  constructor(readonly path: string, readonly command: Command, message: string) {
    super(message);
  }
}

/**
 * Runs the command `argv` names and returns the process exit code. Usage mistakes print one line plus the
 * usage and return 2; a {@link CliError} prints `error[code]: message` (or JSON under `--json`) and returns its
 * exit code; anything else is an internal error, reported with its message only.
 */
export async function dispatch(program: Command, argv: string[], io: Io): Promise<number> {
  const wantsJson = argv.includes("--json");
  let resolved: Resolved | undefined;
  try {
    resolved = await resolveCommand(program, argv);
    const { path, command, rest } = resolved;
    // `--version` alone runs the program's own `version` command, as it does for most CLIs.
    if (path === program.name && rest.length === 1 && rest[0] === "--version") {
      if (command.subcommands?.some((c) => c.name === "version")) {
        return await dispatch(program, ["version"], io);
      }
    }
    if (rest.includes("--help") || rest.includes("-h")) {
      io.out(usageText(path, command));
      return 0;
    }
    if (!command.run) {
      if (rest.length === 0) {
        io.err(usageText(path, command));
        return 2;
      }
      throw new UsageAt(path, command, `Unknown option "${rest[0]}" for "${path}"`);
    }
    const { values, positionals } = parseCommandArgs(path, command, rest);
    return await command.run({ path, values, positionals, io });
  } catch (error) {
    return report(error, resolved, io, wantsJson);
  }
}

function parseCommandArgs(
  path: string,
  command: Command,
  rest: string[],
): { values: Record<string, string | boolean | (string | boolean)[] | undefined>; positionals: string[] } {
  let parsed;
  try {
    parsed = parseArgs({ args: rest, options: command.options ?? {}, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageAt(path, command, parseArgsMessage(path, error));
  }
  const [min, max] = command.positionals ?? [0, 0];
  const n = parsed.positionals.length;
  if (n > max) {
    throw new UsageAt(path, command, `Unexpected argument "${parsed.positionals[max]}" for "${path}"`);
  }
  if (n < min) {
    throw new UsageAt(path, command, `Missing argument for "${path}": expected ${command.usage ?? min}`);
  }
  return { values: parsed.values, positionals: parsed.positionals };
}

function parseArgsMessage(path: string, error: unknown): string {
  const message = messageOf(error);
  const unknown = message.match(/Unknown option '([^']+)'/);
  if (unknown) return `Unknown option "${unknown[1]}" for "${path}"`;
  const missing = message.match(/Option '(?:-\w, )?(--[\w-]+) <value>' argument missing/);
  if (missing) return `Option "${missing[1]}" needs a value`;
  return message.replace(/\. To specify.*$/, "").replace(/\.$/, "");
}

function report(error: unknown, resolved: Resolved | undefined, io: Io, json: boolean): number {
  const cli = error instanceof CliError
    ? error
    : new CliError("internal", `Internal error: ${messageOf(error)}`);
  if (json) {
    io.out(JSON.stringify({ error: { code: cli.code, message: cli.message, details: cli.details } }) + "\n");
  } else {
    io.err(`error[${cli.code}]: ${cli.message}\n`);
  }
  if (cli instanceof UsageAt && !json) io.err("\n" + usageText(cli.path, cli.command));
  else if (cli instanceof UsageError && resolved && !json) {
    io.err("\n" + usageText(resolved.path, resolved.command));
  }
  return cli.exitCode;
}
