// `ployz restart PROJECT/SERVICE`: every slot on every Machine (or --machine M), one at a time, health-gated; the
// Serving Pointer is not moved. The flow is lib/operator's restartSlots; this file parses and prints.
import { CliError, type Command } from "../../lib/cli/mod.ts";
import { MAX_HEALTH_WAIT_MS, MAX_MONITOR_MS } from "../../lib/deploy/mod.ts";
import { durationFlag } from "./duration_flag.ts";
import {
  restartOrder,
  type RestartReceipt,
  type RestartSlot,
  restartSlots,
  type RestartStep,
} from "../../lib/operator/mod.ts";
import type { ListContainersResponse } from "../../lib/rpc/mod.ts";
import { askAll, clusterTargets, partialLines, requireAnyAnswer } from "./cluster_targets.ts";
import { jsonLine, openConfig, parseTarget } from "./connect.ts";
import { receiptBook, requestKey } from "./receipts.ts";
import { sharedOptions, stringFlag } from "./flags.ts";

function stepJson(step: RestartStep): Record<string, unknown> {
  return {
    "machine_name": step.slot.machine.name,
    "container_id": step.slot.container.id,
    name: step.slot.container.name,
    slot: step.slot.container.slot,
    status: step.status,
    ...(step.via === undefined ? {} : { via: step.via }),
    ...(step.earlier === true ? { done: "earlier" } : {}),
    ...(step.error === undefined ? {} : { error: step.error }),
    ...(step.elapsedMs === undefined ? {} : { "elapsed_ms": step.elapsedMs }),
    ...(step.left === undefined ? {} : { left: step.left }),
  };
}

function leftText(step: RestartStep): string {
  const left = step.left;
  if (left === undefined) return "";
  if ("skipped" in left) return `; not taken out of the proxies first: ${left.skipped}`;
  const drained = left.drainedMs === undefined
    ? ""
    : (left.inFlight ?? 0) === 0
    ? `; drained in ${left.drainedMs} ms`
    : `; stopped with ${left.inFlight} connection${
      left.inFlight === 1 ? "" : "s"
    } still open after ${left.drainedMs} ms`;
  return (left.missing.length === 0
    ? `; left every proxy first (${left.acked} Machines acked in ${left.waitedMs} ms)`
    : `; stopped after ${left.waitedMs} ms without the proxy ack of ${left.missing.join(", ")}`) + drained;
}

/** `ployz restart`. */
export const restartCommand: Command = {
  name: "restart",
  summary: "Restart a Service's containers one slot at a time, each health-gated",
  usage: "PROJECT/SERVICE [--machine M] [--timeout 2m] [--monitor 5s] [--request-key KEY] [--json]",
  description: [
    "Stops and starts each container of the Service in slot order and waits for the Machine's health gate",
    "(its healthcheck, or --monitor of staying up) before the next; the Serving Pointer is not moved.",
    "The first slot that does not come back healthy stops the run: the rest is reported as not attempted.",
    "Each slot keeps a receipt under the request key (printed); a re-run with --request-key KEY skips the slots",
    "already restarted and restarts the others.",
  ],
  positionals: [1, 1],
  options: sharedOptions("json", "machine", "timeout", "monitor", "request-key"),
  async run({ values, positionals, io }): Promise<number> {
    const { project, service } = parseTarget(positionals[0], true);
    // Each slot's wait is one health gate on its Machine, bounded there.
    const deadlineMs = durationFlag(values, "timeout", { min: 1000, max: MAX_HEALTH_WAIT_MS }) ?? 120_000;
    const monitorMs = durationFlag(values, "monitor", { max: MAX_MONITOR_MS }) ?? 5_000;
    const json = values.json === true;
    using targets = await clusterTargets({ machine: stringFlag(values, "machine") });
    const listed = await askAll<ListContainersResponse>(
      targets,
      (client, _m, signal) => client.listContainers({ project, service }, { signal }),
    );
    requireAnyAnswer(listed, `list "${project}/${service}"`);
    const clients = new Map(targets.targets.flatMap((t) => "client" in t ? [[t.id, t.client] as const] : []));
    const slots: RestartSlot[] = restartOrder(
      listed.successes.flatMap((s) =>
        s.value.containers.filter((c) => c.slot !== "hook").map((c) => ({
          machine: s.machine,
          container: { id: c.id, name: c.name, slot: c.slot },
          api: clients.get(s.machine.id)!,
        }))
      ),
    );
    if (slots.length === 0) {
      throw new CliError(
        "not_found",
        `Service "${project}/${service}" has no containers on the Machines that answered`,
      );
    }
    const key = requestKey(values["request-key"], `restart-${project}-${service}`);
    using config = openConfig();
    const steps: RestartStep[] = await restartSlots(slots, {
      deadlineMs,
      monitorMs,
      receipts: receiptBook<RestartReceipt>(config, key),
      onStep(step) {
        if (json) io.out(jsonLine({ type: "step", ...stepJson(step as RestartStep) }));
        else if ((step as RestartStep).earlier === true) {
          io.out(
            `Already restarted ${step.slot.container.name} on "${step.slot.machine.name}" by an earlier run of this request\n`,
          );
        } else if (step.status === "running") {
          io.err(`Restarting ${step.slot.container.name} on "${step.slot.machine.name}"…\n`);
        } else if (step.status === "restarted") {
          io.out(
            `Restarted ${step.slot.container.name} on "${step.slot.machine.name}" (healthy via ${
              (step as RestartStep).via ?? "gate"
            })${leftText(step as RestartStep)}\n`,
          );
        } else if (step.status === "failed") {
          const error = (step as RestartStep).error!;
          io.out(
            `Failed ${step.slot.container.name} on "${step.slot.machine.name}": error[${error.code}]: ${error.message}\n`,
          );
        }
      },
    });
    const skipped = steps.filter((s) => s.status === "not_attempted");
    const partial = partialLines(listed);
    if (json) {
      io.out(jsonLine({
        type: "outcome",
        "request_key": key,
        status: steps.every((s) => s.status === "restarted") && partial.length === 0
          ? "succeeded"
          : "partial",
        steps: steps.map(stepJson),
      }));
    } else {
      for (const s of skipped) {
        io.out(`Not attempted: ${s.slot.container.name} on "${s.slot.machine.name}"\n`);
      }
      io.out(`request key: ${key}\n`);
      for (const line of partial) io.err(`${line}\n`);
    }
    return steps.every((s) => s.status === "restarted") && partial.length === 0 ? 0 : 1;
  },
};
