import type { Command } from "./command.ts";
import { CliError } from "./errors.ts";

/**
 * A command that exists in the design but not yet in this build: it says so plainly and fails, so nothing
 * pretends to have worked.
 */
export function notBuilt(name: string, summary: string, programPath: string): Command {
  return {
    name,
    summary: `${summary} (not built yet)`,
    run(): Promise<number> {
      throw new CliError("unsupported", `"${programPath} ${name}" is not built yet in this release`);
    },
  };
}
