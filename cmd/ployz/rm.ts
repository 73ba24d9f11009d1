// `ployz rm PROJECT[/SERVICE]`: remove containers, with a Preview and Data Loss confirmation.
import type { Command } from "../../lib/cli/mod.ts";
import { newDeploymentId, type NormalizedProject, planRemoval } from "../../lib/deploy/mod.ts";
import { openConfig, parseTarget } from "./connect.ts";
import { withDeployMachines } from "./deploy_machines.ts";
import { listOption } from "./deploy.ts";
import { confirmPlan, executeAndReport, observe } from "./deploy_flow.ts";

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
      const saved = config.savedState(project)?.compose as NormalizedProject | undefined;
      return await withDeployMachines(async (machines) => {
        const snapshot = await observe(machines, project, []);
        const plan = planRemoval({
          project,
          service,
          machines: snapshot.machines,
          saved,
          deploymentId: newDeploymentId(),
          observedAt: snapshot.observedAt,
        });
        for (const f of snapshot.failures) {
          plan.warnings.push(
            `Machine "${f.machineName}" was not observed (${f.error.code}: ${f.error.message})`,
          );
        }
        const options = {
          io,
          json: values.json === true,
          yes: values.yes === true,
          dryRun: false,
          confirmDataLoss: listOption(values["confirm-data-loss"]),
          verb: "remove",
        };
        if (!await confirmPlan(plan, options)) return plan.ops.length === 0 ? 0 : 1;
        return await executeAndReport(plan, machines, config, {
          ...options,
          record: { removal: service ?? "*" },
        });
      });
    } finally {
      config.close();
    }
  },
};
