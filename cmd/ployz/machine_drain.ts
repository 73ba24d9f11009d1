// `ployz machine drain` and `ployz machine undrain`: a bounded command that ends and reports each Project.
import type { Command } from "../../lib/cli/mod.ts";
import { MAX_MONITOR_MS } from "../../lib/deploy/mod.ts";
import { durationFlag } from "./duration_flag.ts";
import { type DrainLegReceipt, drainMachine, type DrainResult } from "../../lib/operator/mod.ts";
import { jsonLine, openConfig } from "./connect.ts";
import { deployReport, withDeployMachines } from "./deploy_machines.ts";
import { configureAndPrint, settingsLine } from "./machine_label.ts";
import { receiptBook, requestKey } from "./receipts.ts";
import { sharedOptions } from "./flags.ts";

/** The human form of a Drain's report. */
export function drainLines(result: DrainResult): string {
  const lines = [
    `Drained Machine "${result.machine.name}" (${result.machine.id}) in ${
      (result.elapsedMs / 1000).toFixed(1)
    } s: it accepts no new workloads`,
  ];
  for (const p of result.projects) {
    lines.push(`  ${p.project}: ${p.status}${p.detail === undefined ? "" : ` (${p.detail})`}`);
  }
  if (result.projects.length === 0) lines.push("  no Project with a Saved State had containers there");
  for (const k of result.kept) lines.push(`  kept: Global Service ${k} stays on "${result.machine.name}"`);
  for (const v of result.volumes) {
    const used = v.usedBytes === undefined ? "" : `, ${(v.usedBytes / 2 ** 20).toFixed(1)}MiB used`;
    lines.push(
      v.role === "writer"
        ? `  kept: Provisioned Volume ${v.name} (Writer${used}) stays on "${result.machine.name}" (a Drain moves ` +
          `no data): move it with "ployz volume move ${v.name} --to MACHINE"`
        : `  kept: Provisioned Volume ${v.name} (Mirror${used}) stays on "${result.machine.name}": delete it with ` +
          `"ployz volume rm-mirror ${v.name} --on ${result.machine.name}" if it is not wanted there`,
    );
  }
  if (result.volumesUnknown !== undefined) {
    lines.push(`  unknown: the Provisioned Volumes of "${result.machine.name}" (${result.volumesUnknown})`);
  }
  for (const u of result.unmanaged) {
    lines.push(`  left: Project "${u}" has no Saved State in this Config Store; its containers stay`);
  }
  return lines.join("\n") + "\n";
}

/** `ployz machine drain`. */
export const machineDrainCommand: Command = {
  name: "drain",
  summary: "Stop new workloads on a Machine and move its replicated slots to other Machines",
  usage: "MACHINE [--force] [--monitor 5s] [--request-key KEY] [--json]",
  description: [
    "The Machine stops accepting new workloads, then each Project with containers there is deployed again from its",
    "Saved State: replicated slots start elsewhere (health-gated) before the old ones are removed. Global slots stay,",
    "and so do Provisioned Volumes (listed, with the command that moves each: ployz volume move).",
    "Refused when no other Machine accepts workloads, unless --force.",
    "Each leg's receipt is kept under the request key (printed; see ployz receipts): a re-run with --request-key",
    "KEY continues, skipping the legs already done.",
  ],
  positionals: [1, 1],
  options: { force: { type: "boolean" }, ...sharedOptions("monitor", "request-key", "json") },
  async run({ values, positionals, io }): Promise<number> {
    const json = values.json === true;
    const monitorMs = durationFlag(values, "monitor", { max: MAX_MONITOR_MS });
    const key = requestKey(values["request-key"], `drain-${positionals[0]}`);
    using config = openConfig();
    const result = await withDeployMachines((machines) =>
      drainMachine(machines, config, positionals[0], {
        force: values.force === true,
        monitorMs,
        receipts: receiptBook<DrainLegReceipt>(config, key),
        report: () => deployReport(io, { json, verb: "drain" }),
        drained: (m) => {
          if (!json) io.out(settingsLine(m));
        },
      })
    );
    io.out(
      json
        ? jsonLine({ type: "drain", "request_key": key, ...result })
        : `${drainLines(result)}request key: ${key}\n`,
    );
    return result.projects.every((p) => p.status === "succeeded" || p.status === "unchanged") ? 0 : 1;
  },
};

/** `ployz machine undrain`. */
export const machineUndrainCommand: Command = {
  name: "undrain",
  summary: "Let a drained Machine take new workloads again",
  usage: "MACHINE [--json]",
  description: "Nothing moves back on its own: the next Deploy places slots there again.",
  positionals: [1, 1],
  options: sharedOptions("json"),
  run(ctx): Promise<number> {
    return configureAndPrint(ctx, ctx.positionals[0], () => ({ "accepts_workloads": true }));
  },
};
