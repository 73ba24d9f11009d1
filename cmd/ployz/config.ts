// `ployz config`: the normalized Project of the Compose input, as `docker compose config` prints it, without
// contacting any Machine.
import { stringify } from "yaml";
import type { Command } from "../../lib/cli/mod.ts";
import { formatIssue } from "../../lib/deploy/mod.ts";
import { COMPOSE_OPTIONS, COMPOSE_USAGE, loadComposeInput } from "./compose_input.ts";
import { sharedOptions } from "./flags.ts";

/** `ployz config`. */
export const configCommand: Command = {
  name: "config",
  summary: "Print the normalized Project of a Compose file without contacting any Machine",
  usage: `${COMPOSE_USAGE} [--json]`,
  description:
    "Loads the Compose file(s) as `ployz deploy` would and prints the result, or every problem found.\n" +
    "Warnings go to standard error.",
  options: { ...COMPOSE_OPTIONS, ...sharedOptions("json") },
  run({ values, io }): Promise<number> {
    const { loaded } = loadComposeInput(values);
    for (const warning of loaded.warnings) io.err(`warning: ${formatIssue(warning)}`);
    io.out(
      values.json === true ? JSON.stringify(loaded.project, null, 2) : stringify(loaded.project).trimEnd(),
    );
    return Promise.resolve(0);
  },
};
