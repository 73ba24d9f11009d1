// `ployz scale PROJECT/SERVICE=N`: change the replica count in the Saved State and deploy it. A bounded command:
// its one leg (the Deploy) keeps a receipt under the request key; a re-run with the same key sends nothing once the
// leg is known done, and otherwise deploys again, which is safe (a Deploy re-plans from what the Machines report,
// and its creation keys find earlier effects).
import { CliError, type Command, UsageError } from "../../lib/cli/mod.ts";
import type { NormalizedProject } from "../../lib/deploy/mod.ts";
import { openConfig, parseTarget } from "./connect.ts";
import { credentialCache, deployProject } from "../../lib/operator/mod.ts";
import { deployReport, flowExitCode, withDeployMachines } from "./deploy_machines.ts";
import { jsonLine } from "./connect.ts";
import { receiptBook, requestKey } from "./receipts.ts";
import { sharedOptions } from "./flags.ts";

/** The receipt of a scale's one leg: `sent` until the Deploy's end is known. */
interface ScaleReceipt {
  /** `sent`, or how the Deploy ended (`succeeded`, `unchanged`, `partial`, `failed`, `declined`). */
  status: string;
  /** `project/service`. */
  target: string;
  /** The replica count asked. */
  replicas: number;
}

const DONE = new Set(["succeeded", "unchanged"]);

/** `ployz scale`. */
export const scaleCommand: Command = {
  name: "scale",
  summary: "Change how many containers a Service runs",
  usage: "PROJECT/SERVICE=N [-y] [--request-key KEY] [--json]",
  description:
    "The Deploy keeps a receipt under the request key (printed; see ployz receipts): a re-run with " +
    "--request-key KEY sends nothing once it is known done.",
  positionals: [1, 1],
  options: sharedOptions("yes", "json", "request-key"),
  async run({ values, positionals, io }): Promise<number> {
    const [target, count] = positionals[0].split("=");
    const replicas = Number(count);
    if (count === undefined || !Number.isInteger(replicas) || replicas < 1) {
      throw new UsageError(
        `Invalid scale "${positionals[0]}": expected PROJECT/SERVICE=N with N of 1 or more`,
      );
    }
    const { project, service } = parseTarget(target, true);
    using config = openConfig();
    const key = requestKey(values["request-key"], `scale-${project}-${service}`);
    const receipts = receiptBook<ScaleReceipt>(config, key);
    const prior = receipts.load("deploy");
    if (prior !== undefined && (prior.target !== `${project}/${service}` || prior.replicas !== replicas)) {
      throw new CliError(
        "invalid_argument",
        `Request key "${key}" was used for "ployz scale ${prior.target}=${prior.replicas}", not ` +
          `"${positionals[0]}": give another key, or none`,
      );
    }
    if (prior !== undefined && DONE.has(prior.status)) {
      if (values.json === true) {
        io.out(jsonLine({ type: "scale", "request_key": key, status: prior.status, resent: false }));
      } else {
        io.out(
          `Scale of "${project}/${service}" to ${replicas} already ended (${prior.status}) in an earlier run ` +
            `of this request: nothing sent\nrequest key: ${key}\n`,
        );
      }
      return 0;
    }
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
    const leg = (status: string): ScaleReceipt => ({ status, target: `${project}/${service}`, replicas });
    receipts.save("deploy", leg("sent"));
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
    receipts.save("deploy", leg(result.status === "ran" ? result.outcome.status : result.status));
    if (result.status === "declined") io.err("Nothing changed: the operator declined\n");
    if (values.json === true) io.out(jsonLine({ type: "scale", "request_key": key }));
    else io.out(`request key: ${key}\n`);
    return flowExitCode(result);
  },
};
