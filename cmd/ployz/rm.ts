// `ployz rm PROJECT[/SERVICE]`: remove containers, with a Preview and Data Loss confirmation.
import type { Command } from "../../lib/cli/mod.ts";
import { removeProject } from "../../lib/operator/mod.ts";
import { openConfig, parseTarget } from "./connect.ts";
import { deployReport, flowExitCode, withDeployMachines } from "./deploy_machines.ts";
import { listOption } from "./deploy.ts";

/** `ployz rm`. */
export const rmCommand: Command = {
  name: "rm",
  summary: "Remove a Project's or a Service's containers",
  usage: "PROJECT[/SERVICE] [-y] [--json] [--confirm-data-loss NAME,...]",
  positionals: [1, 1],
  options: {
    yes: { type: "boolean", short: "y" },
    json: { type: "boolean" },
    "confirm-data-loss": { type: "string", multiple: true },
  },
  async run({ values, positionals, io }): Promise<number> {
    const { project, service } = parseTarget(positionals[0], false);
    const config = openConfig();
    try {
      const result = await withDeployMachines((machines) =>
        removeProject(machines, config, { project, service }, {
          report: deployReport(io, { json: values.json === true, verb: "remove" }),
          yes: values.yes === true,
          dryRun: false,
          confirmDataLoss: listOption(values["confirm-data-loss"]),
          verb: "remove",
        })
      );
      return flowExitCode(result);
    } finally {
      config.close();
    }
  },
};
