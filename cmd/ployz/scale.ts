// `ployz scale PROJECT/SERVICE=N`: change the replica count in the Saved State and deploy it.
import { CliError, type Command, UsageError } from "../../lib/cli/mod.ts";
import type { NormalizedProject } from "../../lib/deploy/mod.ts";
import { openConfig, parseTarget } from "./connect.ts";
import { credentialCache, deployProject } from "../../lib/operator/mod.ts";
import { deployReport, flowExitCode, withDeployMachines } from "./deploy_machines.ts";

/** `ployz scale`. */
export const scaleCommand: Command = {
  name: "scale",
  summary: "Change how many containers a Service runs",
  usage: "PROJECT/SERVICE=N [-y] [--json]",
  positionals: [1, 1],
  options: { yes: { type: "boolean", short: "y" }, json: { type: "boolean" } },
  async run({ values, positionals, io }): Promise<number> {
    const [target, count] = positionals[0].split("=");
    const replicas = Number(count);
    if (count === undefined || !Number.isInteger(replicas) || replicas < 1) {
      throw new UsageError(
        `Invalid scale "${positionals[0]}": expected PROJECT/SERVICE=N with N of 1 or more`,
      );
    }
    const { project, service } = parseTarget(target, true);
    const config = openConfig();
    try {
      const state = config.savedState(project);
      const saved = state?.compose as NormalizedProject | undefined;
      if (state === undefined || saved === undefined) {
        throw new CliError(
          "not_found",
          `Project "${project}" has no Saved State: deploy it first with "ployz deploy"`,
        );
      }
      const current = saved.services[service!];
      if (current === undefined) {
        throw new CliError("not_found", `Service "${project}/${service}" is not in the Saved State`);
      }
      if (current.mode === "global") {
        throw new CliError(
          "invalid_argument",
          `Service "${project}/${service}" is global: it runs one container per Machine`,
        );
      }
      const next: NormalizedProject = {
        ...saved,
        services: { ...saved.services, [service!]: { ...current, replicas } },
      };
      const result = await withDeployMachines((machines) =>
        deployProject(machines, config, { project: next, warnings: [], sourcePath: state.sourcePath }, {
          report: deployReport(io, { json: values.json === true, verb: "scale" }),
          yes: values.yes === true,
          dryRun: false,
          confirmDataLoss: [],
          verb: "scale",
          registryAuth: credentialCache({ saved: (host) => config.registryCredential(host) }),
        })
      );
      if (result.status === "declined") io.err("Nothing changed: the operator declined\n");
      return flowExitCode(result);
    } finally {
      config.close();
    }
  },
};
