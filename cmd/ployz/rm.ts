// `ployz rm PROJECT[/SERVICE]`: a removal mark, the Saved State removed with it, and a bounded wait while each
// reachable Machine removes its containers; `--status` and `--cancel` read and cancel marks.
import { type Command, type Io, UsageError } from "../../lib/cli/mod.ts";
import { toWire } from "../../lib/deploy/mod.ts";
import {
  cancelRemoval,
  type RemovalOutcome,
  type RemovalReceipt,
  removalStatus,
  removeWithMark,
} from "../../lib/operator/mod.ts";
import { jsonLine, openConfig, parseTarget } from "./connect.ts";
import { deployReport, type OpenMachines, withDeployMachines } from "./deploy_machines.ts";
import { listOption } from "./deploy.ts";
import { receiptBook, requestKey } from "./receipts.ts";
import { sharedOptions } from "./flags.ts";

/** `ployz rm`. */
export const rmCommand: Command = {
  name: "rm",
  summary: "Remove a Project or a Service: its containers on every Machine, and its Saved State",
  usage: "PROJECT[/SERVICE] [-y] [--json] [--wait SECONDS] [--volumes --confirm-data-loss NAME,...] " +
    "[--request-key KEY] | " +
    "--status [PROJECT] | --cancel PROJECT[/SERVICE]",
  description:
    "A Machine not reachable now removes its containers when it is next reachable (the removal stays " +
    "pending until then; see --status). Named volumes are kept unless --volumes, which is Data Loss: name each " +
    "volume in --confirm-data-loss. Each leg (the mark, the wait) keeps a receipt under the request key " +
    "(printed; see ployz receipts): a re-run with --request-key KEY marks nothing again and waits once more.",
  positionals: [0, 1],
  options: {
    ...sharedOptions("yes", "json"),
    wait: { type: "string" },
    status: { type: "boolean" },
    cancel: { type: "boolean" },
    volumes: { type: "boolean" },
    ...sharedOptions("confirm-data-loss", "request-key"),
  },
  async run({ values, positionals, io }): Promise<number> {
    const json = values.json === true;
    if (values.status === true) {
      const project = positionals[0] === undefined ? undefined : parseTarget(positionals[0], false).project;
      return await withDeployMachines(async (machines) => {
        printStatus(
          io,
          machines,
          await removalStatus(machines, project === undefined ? {} : { project }),
          json,
        );
        return 0;
      });
    }
    if (positionals[0] === undefined) throw new UsageError("ployz rm needs PROJECT or PROJECT/SERVICE");
    const target = parseTarget(positionals[0], false);
    if (values.cancel === true) {
      return await withDeployMachines(async (machines) => {
        const { removal } = await cancelRemoval(machines, target);
        if (json) io.out(jsonLine({ type: "cancelled", removal }));
        else {
          io.out(
            `Cancelled the removal of "${removal.project}/${removal.service}": containers already removed stay ` +
              `removed, the others are kept; the Saved State is not restored (deploy again from the Compose file)\n`,
          );
        }
        return 0;
      });
    }
    const waitText = typeof values.wait === "string" ? values.wait : "60";
    const waitSeconds = Number(waitText);
    if (!Number.isFinite(waitSeconds) || waitSeconds < 0 || waitSeconds > 3600) {
      throw new UsageError(`Invalid --wait "${waitText}": expected seconds from 0 to 3600`);
    }
    using config = openConfig();
    const key = requestKey(
      values["request-key"],
      `rm-${target.project}${target.service === undefined ? "" : `-${target.service}`}`,
    );
    const result = await withDeployMachines((machines) =>
      removeWithMark(machines, config, target, {
        receipts: receiptBook<RemovalReceipt>(config, key),
        report: deployReport(io, { json, verb: "remove" }),
        progress: (line) => {
          if (json) io.out(jsonLine({ type: "progress", line }));
          else io.out(`${line}\n`);
        },
        yes: values.yes === true,
        patienceMs: waitSeconds * 1000,
        volumes: values.volumes === true,
        confirmDataLoss: listOption(values["confirm-data-loss"]),
      })
    );
    if (result.status === "declined") {
      io.err("Nothing changed: the operator declined\n");
      return 1;
    }
    if (json) io.out(jsonLine({ type: "outcome", outcome: toWire(result.outcome), "request_key": key }));
    else io.out(`${renderRemoval(result.outcome)}request key: ${key}\n`);
    return result.outcome.status === "done" ? 0 : 1;
  },
};

/** The closing summary of a removal. */
function renderRemoval(outcome: RemovalOutcome): string {
  const lines = [
    outcome.status === "done"
      ? `Removal of "${outcome.removal}" done (removal ${
        outcome.removalId.slice(0, 8)
      }, at ${outcome.observedAt})`
      : `Removal of "${outcome.removal}" pending (removal ${
        outcome.removalId.slice(0, 8)
      }, at ${outcome.observedAt})`,
    `Removed (${outcome.removed.length}):`,
    ...outcome.removed.map((r) => `  - ${r.container.name} on ${r.machineName}`),
  ];
  if (outcome.pending.length > 0) {
    lines.push(
      `Pending (${outcome.pending.length} Machine${outcome.pending.length === 1 ? "" : "s"}): each removes ` +
        `its containers when next reachable; see "ployz rm --status":`,
    );
    for (const p of outcome.pending) {
      lines.push(`  - ${p.machineName}: ${p.reason}`);
      for (const c of p.containers) lines.push(`      ${c.name}`);
    }
  }
  lines.push(
    outcome.savedState === "removed"
      ? "Saved State: removed"
      : outcome.savedState === "service_removed"
      ? "Saved State: the Service was removed from it"
      : "Saved State: none was held",
  );
  if (outcome.volumesKept.length > 0) lines.push(`Volumes kept: ${outcome.volumesKept.join(", ")}`);
  if (outcome.volumesRemoved.length > 0) {
    lines.push(
      `Volumes removed by each Machine once its containers are gone: ${outcome.volumesRemoved.join(", ")}`,
    );
  }
  return lines.join("\n") + "\n";
}

function printStatus(
  io: Io,
  machines: OpenMachines,
  status: Awaited<ReturnType<typeof removalStatus>>,
  json: boolean,
): void {
  const names = new Map(machines.handles.map((h) => [h.id, h.name]));
  const nameOf = (id: string): string => names.get(id) ?? id.slice(0, 12);
  if (json) {
    for (const r of status.removals) io.out(jsonLine({ type: "removal", ...r }));
    return;
  }
  if (status.removals.length === 0) {
    io.out("No removal marks\n");
    return;
  }
  io.out(`Removal marks, as Machine "${machines.handles[0]?.name ?? "?"}" sees them:\n`);
  for (const { removal, acked, remaining, volume_errors: volumeErrors } of status.removals) {
    const state = removal.state !== "active" ? removal.state : remaining.length === 0 ? "done" : "pending";
    io.out(
      `${removal.project}/${removal.service}  ${state}  removal ${removal.id.slice(0, 8)}  marked ${
        removal.created_at ?? "?"
      }  acked by ${acked.length === 0 ? "none" : acked.map(nameOf).join(",")}\n`,
    );
    for (const v of volumeErrors ?? []) {
      io.out(`  volume not removed on ${nameOf(v.machine_id)}: ${v.error}\n`);
    }
    if (removal.state !== "active") continue;
    const byMachine = new Map<string, string[]>();
    for (const c of remaining) {
      byMachine.set(c.machine_id, [...byMachine.get(c.machine_id) ?? [], `${c.name} (${c.state})`]);
    }
    for (const [id, list] of byMachine) io.out(`  remaining on ${nameOf(id)}: ${list.join(", ")}\n`);
  }
}
