import type { Command } from "./command.ts";
import { CliError } from "./errors.ts";
import { damagedRelease, messageOf } from "../util/mod.ts";

/**
 * A command whose module is imported only when the command line selects it, so a process carries only the code
 * it runs. Pass `load` as `() => import("./x.ts").then((m) => m.xCommand)` with a literal specifier, so that
 * `deno compile` includes the module. deno.json's `lazy-dynamic-imports` keeps `deno run` from parsing the graphs
 * of the commands that do not run (about 6 MB of resident memory for `ployzd dns`); Deno then checks read
 * permission for the imported code, which is why each ployzd permission set reads `./cmd` and `./lib`. Without the
 * flag (a launch without deno.json) everything still works, with the graphs parsed up front.
 */
export function lazyCommand(name: string, summary: string, load: () => Promise<Command>): Command {
  return { name, summary, load };
}

/**
 * Replaces a stub made by {@link lazyCommand} with the command it loads. A module that cannot be loaded (a release
 * tree with a file missing or damaged) is one {@link CliError} naming the command and the module, exit 1.
 */
export async function loadCommand(command: Command, path: string): Promise<Command> {
  if (!command.load) return command;
  let loaded: Command | undefined;
  try {
    loaded = await command.load();
  } catch (error) {
    throw new CliError("internal", damagedRelease(`"${path}"`, error), {
      details: { command: path, module: moduleOf(messageOf(error)) },
    });
  }
  if (loaded?.name !== command.name) {
    throw new CliError("internal", `"${path}" loaded no command named "${command.name}"`);
  }
  return loaded;
}

// Deno names the module it could not load in quotes: `Module not found "file:///…/x.ts".`
function moduleOf(message: string): string | undefined {
  return message.match(/"((?:file|npm|jsr|https?):[^"]+)"/)?.[1];
}
