// `ployz deploy`: load the Compose file, plan against every Machine's Snapshot (taken through the Entry Machine),
// confirm, execute, report.
import { type Command, UsageError } from "../../lib/cli/mod.ts";
import { DEFAULT_PARALLEL, DEFAULT_PER_MACHINE, formatIssue, MAX_MONITOR_MS } from "../../lib/deploy/mod.ts";
import { durationFlag } from "./duration_flag.ts";
import { COMPOSE_OPTIONS, COMPOSE_USAGE, loadComposeInput } from "./compose_input.ts";
import { openConfig } from "./connect.ts";
import { credentialCache, deployProject } from "../../lib/operator/mod.ts";
import { deployReport, flowExitCode, withDeployMachines } from "./deploy_machines.ts";
import { traceMark } from "../../lib/util/mod.ts";
import { sharedOptions } from "./flags.ts";

/** Splits repeated or comma-separated values. */
export function listOption(value: unknown): string[] {
  const items = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return items.flatMap((v) => String(v).split(",")).map((v) => v.trim()).filter((v) => v !== "");
}

/** The longest `--call-timeout`: how long one Machine may take to answer one question of a Deploy. */
const MAX_CALL_TIMEOUT_MS = 3_600_000;

/** `--parallel N`: how many operations run at once, 1 to 64. */
export function parseParallel(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (typeof value !== "string" || !/^[0-9]+$/.test(value) || n < 1 || n > 64) {
    throw new UsageError(
      `Invalid value for "--parallel": "${String(value)}" (expected a whole number from 1 to 64)`,
    );
  }
  return n;
}

/** `ployz deploy`. */
export const deployCommand: Command = {
  name: "deploy",
  summary: "Deploy a Compose file to the Cluster",
  usage:
    `${COMPOSE_USAGE} [-y] [--json] [--dry-run] [--monitor 5s] [--confirm-data-loss NAME,...] [--parallel N] ` +
    "[--call-timeout 2m] [--builder MACHINE] [--no-cache]",
  description: "Plans against what the Machines report, shows the Preview, and runs the operations.\n" +
    "Nothing is rolled back except a replacement that fails its health check.\n" +
    `--parallel N runs up to N operations at once (default ${DEFAULT_PARALLEL}, ` +
    `at most ${DEFAULT_PER_MACHINE} per Machine): different\n` +
    "Machines and Services with no depends_on between them side by side, a Service after what it depends on,\n" +
    "a Service's replacements one at a time; a container past its healthcheck, in its monitor period, no\n" +
    "longer counts against either bound.\n" +
    "After a failure nothing new starts; what was running finishes and is reported. --parallel 1 runs one\n" +
    "operation at a time, strictly in plan order.\n" +
    "--call-timeout D is how long, beyond an operation's own wait (health gate, stop grace), to wait for a Machine\n" +
    "that took a request and went silent; its operation is then reported with an unknown outcome. Default 2m.\n" +
    "It bounds each question of the observation before the plan too (default 1m there): a Machine silent past it\n" +
    "is a failed observation, named in the Preview.\n" +
    "build: Services are built first on --builder (default: the Entry Machine), then their images are distributed\n" +
    "to the Machines that lack them, then deployed. --no-cache builds them again without Docker's layer cache,\n" +
    "under a tag of their own (<content digest>-<random>), which every Machine then runs: a rebuilt image is\n" +
    "another image, and one tag never names two images across Machines.",
  options: {
    ...COMPOSE_OPTIONS,
    ...sharedOptions("yes", "json", "dry-run", "monitor", "confirm-data-loss"),
    parallel: { type: "string" },
    "call-timeout": { type: "string" },
    builder: { type: "string" },
    "no-cache": { type: "boolean" },
  },
  async run({ values, io }): Promise<number> {
    const monitorMs = durationFlag(values, "monitor", { max: MAX_MONITOR_MS });
    const parallel = parseParallel(values.parallel);
    const callTimeoutMs = durationFlag(values, "call-timeout", { min: 1000, max: MAX_CALL_TIMEOUT_MS });
    traceMark("deploy: command loaded");
    const { input, loaded } = loadComposeInput(values);
    traceMark("deploy: Compose file loaded");
    const path = input.files[0];
    using config = openConfig();
    const dryRun = values["dry-run"] === true;
    const result = await withDeployMachines((machines) =>
      deployProject(machines, config, {
        project: loaded.project,
        warnings: loaded.warnings.map(formatIssue),
        sourcePath: path,
        monitorMs,
      }, {
        report: deployReport(io, { json: values.json === true, verb: "deploy" }),
        yes: values.yes === true,
        dryRun,
        confirmDataLoss: listOption(values["confirm-data-loss"]),
        verb: "deploy",
        parallel,
        callTimeoutMs,
        files: loaded.files,
        registryAuth: credentialCache({ saved: (host) => config.registryCredential(host) }),
        builder: values.builder as string | undefined,
        noCache: values["no-cache"] === true,
      }), { composeContext: loaded.project.context ?? undefined });
    if (result.status === "declined") io.err("Nothing changed: the operator declined\n");
    return flowExitCode(result);
  },
};
