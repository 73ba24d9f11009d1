// The Machines a Deploy observes and acts on, opened through the Entry Machine this CLI is connected to, and how a
// Deploy is shown and asked on a terminal or as NDJSON.
import type { Io } from "../../lib/cli/mod.ts";
import {
  type DeployEvent,
  type MachineHandle,
  opView,
  outcomeJson,
  progressPrinter,
  renderOutcome,
  renderPreview,
  toWire,
} from "../../lib/deploy/mod.ts";
import {
  type DeployMachines,
  deployMachinesOf,
  type DeployReport,
  type FlowResult,
} from "../../lib/operator/mod.ts";
import type { MachineClient } from "../../lib/rpc/mod.ts";
import { clusterTargets } from "./cluster_targets.ts";
import { cliError, jsonLine } from "./connect.ts";
import { buildPrinter } from "./build.ts";
import { confirmed } from "./confirm.ts";

/** The Cluster's Machines as this CLI reaches them, closed on dispose. */
export type OpenMachines =
  & DeployMachines
  & { handles: (MachineHandle & { api: MachineClient })[] }
  & Disposable;

/** Lists the Cluster through the Entry Machine; a Machine outside a Cluster is the only one. */
export async function deployMachines(options: { composeContext?: string } = {}): Promise<OpenMachines> {
  const targets = await clusterTargets(options);
  return { ...deployMachinesOf(targets.targets), [Symbol.dispose]: () => targets[Symbol.dispose]() };
}

/** Runs a command body against the Cluster's Machines, translating errors and closing every client. */
export async function withDeployMachines<T>(
  body: (machines: OpenMachines) => Promise<T>,
  options: { composeContext?: string } = {},
): Promise<T> {
  using machines = await deployMachines(options);
  try {
    return await body(machines);
  } catch (error) {
    throw cliError(error);
  }
}

function eventJson(event: DeployEvent): unknown {
  if (event.type === "plan") return toWire({ ...event, ops: event.ops.map(opView) });
  if (event.type === "outcome") return { type: "outcome", outcome: outcomeJson(event.outcome) };
  return toWire(event);
}

/** Shows a Deploy on `io`: the Preview, progress and Outcome as text, or each as one NDJSON line. */
export function deployReport(io: Io, options: { json: boolean; verb: string }): DeployReport {
  const tty = !options.json && Deno.stdout.isTerminal();
  // One printer per executed plan: its rows are that plan's operations.
  let printer = progressPrinter(io.out, { tty });
  const build = buildPrinter(io, options.json);
  return {
    build,
    preview(plan): void {
      if (options.json) {
        io.out(jsonLine({ type: "preview", preview: toWire({ ...plan, ops: plan.ops.map(opView) }) }));
      } else io.out(renderPreview(plan));
    },
    confirm: (question) => confirmed(options.verb, question),
    event(event): void {
      if (options.json) io.out(jsonLine(eventJson(event)));
      else {
        if (event.type === "plan") printer = progressPrinter(io.out, { tty });
        printer.event(event);
      }
    },
    outcome(outcome): void {
      if (!options.json) io.out(renderOutcome(outcome));
    },
  };
}

/** The exit code of a Deploy: 0 when it succeeded, had nothing to do or was only previewed. */
export function flowExitCode(result: FlowResult): number {
  if (result.status === "ran") return result.outcome.status === "succeeded" ? 0 : 1;
  return result.status === "declined" ? 1 : 0;
}
