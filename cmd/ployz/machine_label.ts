// `ployz machine label` and `ployz machine accept`: the named Machine changes its own Labels and acceptance flags
// (only it writes its row). Nothing running moves: the next Deploy or Drain applies them.
import type { Command, CommandContext } from "../../lib/cli/mod.ts";
import { configureMachine, labelRequest, onOff } from "../../lib/operator/mod.ts";
import type { ConfigureMachineRequest, MachineRecord } from "../../lib/rpc/mod.ts";
import { jsonLine, withMachine } from "./connect.ts";
import { sharedOptions, stringFlag } from "./flags.ts";

/** One line describing a Machine's Labels and flags. */
export function settingsLine(machine: MachineRecord): string {
  const labels = Object.entries(machine.labels ?? {}).map(([k, v]) => `${k}=${v}`).join(",") || "-";
  return `Machine "${machine.name}" (${machine.id}): labels ${labels}; workloads ${
    machine.accepts_workloads === false ? "off" : "on"
  }; ingress ${machine.accepts_ingress === false ? "off" : "on"}; builds ${
    machine.accepts_builds === false ? "off" : "on"
  }\n`;
}

/**
 * Has the Machine named `machine` apply `request()` to its own row, through the Entry Machine, and prints the row it
 * wrote: its settings line, or the answer as JSON under --json. `request` runs once the Entry Machine's client is
 * open, and what it throws is reported as that client's errors are.
 */
export async function configureAndPrint(
  { values, io }: CommandContext,
  machine: string,
  request: () => ConfigureMachineRequest,
): Promise<number> {
  const answer = await withMachine((entry) => configureMachine(entry, machine, request()));
  io.out(values.json === true ? jsonLine(answer) : settingsLine(answer.machine));
  return 0;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

/** `ployz machine label`. */
export const machineLabelCommand: Command = {
  name: "label",
  summary: "Set or remove a Machine's Labels (placement constraints read them)",
  usage: "MACHINE KEY=VALUE... [--rm KEY]... [--json]",
  description:
    "The Machine writes its own Labels; running containers stay where they are (labels never evict).",
  positionals: [1, 64],
  options: { rm: { type: "string", multiple: true }, ...sharedOptions("json") },
  run(ctx): Promise<number> {
    const [machine, ...words] = ctx.positionals;
    return configureAndPrint(ctx, machine, () => labelRequest(words, strings(ctx.values.rm)));
  },
};

/** `ployz machine accept`. */
export const machineAcceptCommand: Command = {
  name: "accept",
  summary: "Set whether a Machine accepts new workloads, an Ingress Proxy and Builds",
  usage: "MACHINE [--workloads on|off] [--ingress on|off] [--builds on|off] [--json]",
  description:
    "The Machine writes its own flags and checks them before every create; running containers are not touched.",
  positionals: [1, 1],
  options: {
    workloads: { type: "string" },
    ingress: { type: "string" },
    builds: { type: "string" },
    ...sharedOptions("json"),
  },
  run(ctx): Promise<number> {
    return configureAndPrint(ctx, ctx.positionals[0], () => {
      const workloads = onOff("workloads", stringFlag(ctx.values, "workloads"));
      const ingress = onOff("ingress", stringFlag(ctx.values, "ingress"));
      const builds = onOff("builds", stringFlag(ctx.values, "builds"));
      const request: Record<string, boolean> = {};
      if (workloads !== undefined) request["accepts_workloads"] = workloads;
      if (ingress !== undefined) request["accepts_ingress"] = ingress;
      if (builds !== undefined) request["accepts_builds"] = builds;
      return request;
    });
  },
};
