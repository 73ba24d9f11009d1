// `ployz context`: name a Cluster's Entry Machine (an SSH host or a local socket) and pick which one commands use.
import { CliError, type Command } from "../../lib/cli/mod.ts";
import {
  checkContextName,
  CONNECTION_SOURCES,
  formatConnectUrl,
  OperatorError,
  parseConnectUrl,
} from "../../lib/operator/reach/mod.ts";
import { cliError, connectionChoice, jsonLine, openConfig } from "./connect.ts";
import { table } from "./table.ts";
import { sharedOptions } from "./flags.ts";

const PRECEDENCE = `Precedence, strongest first: ${CONNECTION_SOURCES.join(" > ")} (the local socket).`;

function usageError(error: unknown): CliError {
  const e = cliError(error);
  return error instanceof OperatorError && error.code === "invalid_argument"
    ? new CliError(e.code, e.message, { details: e.details, exitCode: 2 })
    : e;
}

function unknownContext(name: string): CliError {
  return new CliError(
    "not_found",
    `Unknown context "${name.slice(0, 80)}": "ployz context ls" lists the saved ones`,
  );
}

const addCommand: Command = {
  name: "add",
  summary: "Save a context: NAME and ssh://[user@]host[:port] or unix:///path/to/ployz.sock",
  usage: "NAME URL [--use]",
  description: "Saves the context without connecting. --use also makes it the current context.\n" +
    PRECEDENCE,
  options: { use: { type: "boolean" } },
  positionals: [2, 2],
  run({ positionals, values, io }): Promise<number> {
    let name: string;
    let url: string;
    try {
      name = checkContextName(positionals[0]);
      url = formatConnectUrl(parseConnectUrl(positionals[1]));
    } catch (error) {
      throw usageError(error);
    }
    using config = openConfig();
    const existed = config.context(name) !== undefined;
    config.saveContext({ name, url, savedAt: new Date().toISOString() });
    if (values.use === true || config.currentContext() === undefined) config.useContext(name);
    const current = config.currentContext() === name ? " (current)" : "";
    io.out(`${existed ? "Updated" : "Saved"} context "${name}" → ${url}${current}\n`);
    return Promise.resolve(0);
  },
};

const lsCommand: Command = {
  name: "ls",
  summary: "List saved contexts and which connection a command would use",
  usage: "[--json]",
  description: PRECEDENCE,
  options: sharedOptions("json"),
  run({ values, io }): Promise<number> {
    using config = openConfig();
    const contexts = config.contexts();
    const current = config.currentContext();
    const active = connectionChoice();
    if (values.json === true) {
      io.out(jsonLine({
        contexts: contexts.map((c) => ({ name: c.name, url: c.url, current: c.name === current })),
        current: current ?? null,
        active: { source: active.source, context: active.context ?? null, url: active.url },
        precedence: CONNECTION_SOURCES,
      }));
      return Promise.resolve(0);
    }
    io.out(table(
      ["NAME", "URL", "CURRENT"],
      contexts.map((c) => [c.name, c.url, c.name === current ? "*" : ""]),
    ));
    io.out(
      `\nThis command would use ${
        active.context === undefined ? active.url : `context "${active.context}" (${active.url})`
      }, from ${
        active.source === "default" ? "the default: the local socket" : active.source
      }.\n${PRECEDENCE}\n`,
    );
    return Promise.resolve(0);
  },
};

const useCommand: Command = {
  name: "use",
  summary: "Make a saved context the current one (--none: back to the local socket)",
  usage: "NAME | --none",
  options: { none: { type: "boolean" } },
  positionals: [0, 1],
  run({ positionals, values, io }): Promise<number> {
    const name = positionals[0];
    if ((name === undefined) === (values.none !== true)) {
      throw new CliError("invalid_argument", `Give a context name or "--none"`, { exitCode: 2 });
    }
    using config = openConfig();
    if (name === undefined) {
      config.useContext(undefined);
      io.out("No current context: commands use the local socket\n");
      return Promise.resolve(0);
    }
    if (config.context(name) === undefined) throw unknownContext(name);
    config.useContext(name);
    io.out(`Current context: "${name}"\n`);
    return Promise.resolve(0);
  },
};

const rmCommand: Command = {
  name: "rm",
  summary: "Remove a saved context",
  usage: "NAME",
  positionals: [1, 1],
  run({ positionals, io }): Promise<number> {
    const name = positionals[0];
    using config = openConfig();
    if (!config.removeContext(name)) throw unknownContext(name);
    io.out(`Removed context "${name}"\n`);
    return Promise.resolve(0);
  },
};

/** `ployz context`. */
export const contextCommand: Command = {
  name: "context",
  summary: "Name the Clusters this CLI drives (SSH hosts or local sockets) and pick one",
  description: "Every command takes --context NAME and --connect URL; PLOYZ_CONTEXT names a context too.\n" +
    PRECEDENCE,
  subcommands: [addCommand, lsCommand, useCommand, rmCommand],
};

/**
 * After `machine init` or `machine add` on a fresh Cluster: saves the connection the command used as a context
 * (named after the first free, valid name of `names`), unless a context already has its URL. A connection given
 * with `--connect` also becomes the current context, so the next command needs no flag; the local socket does not,
 * since it is what a command without a context uses anyway. Returns the saved name.
 */
export function rememberContext(names: (string | undefined)[]): string | undefined {
  const choice = connectionChoice();
  if (choice.source !== "--connect" && choice.source !== "default") return undefined;
  using config = openConfig();
  const saved = config.contexts();
  if (saved.some((c) => c.url === choice.url)) return undefined;
  const name = names.find((n): n is string => {
    if (n === undefined || saved.some((c) => c.name === n)) return false;
    try {
      checkContextName(n);
      return true;
    } catch {
      return false;
    }
  });
  if (name === undefined) return undefined;
  config.saveContext({ name, url: choice.url, savedAt: new Date().toISOString() });
  if (choice.source === "--connect") config.useContext(name);
  return name;
}
