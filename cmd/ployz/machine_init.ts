// `ployz machine init`: found a Cluster on the local Machine.
import type { Command } from "../../lib/cli/mod.ts";
import { jsonLine, withMachine } from "./connect.ts";
import { rememberContext } from "./context.ts";
import { sharedOptions } from "./flags.ts";

/** `ployz machine init`. */
export const machineInitCommand: Command = {
  name: "init",
  summary: "Found a Cluster on this Machine",
  usage: "[--name NAME] [--cluster NAME] [--subnet CIDR] [--json]",
  options: {
    name: { type: "string" },
    cluster: { type: "string" },
    subnet: { type: "string" },
    ...sharedOptions("json"),
  },
  async run({ values, io }): Promise<number> {
    const request: { machine_name?: string; cluster_name?: string; subnet?: string } = {};
    if (values.name !== undefined) request.machine_name = String(values.name);
    if (values.cluster !== undefined) request.cluster_name = String(values.cluster);
    if (values.subnet !== undefined) request.subnet = String(values.subnet);
    const { machine } = await withMachine((client) => client.init(request));
    const context = rememberContext([machine.cluster_name ?? undefined, machine.name]);
    if (values.json === true) io.out(jsonLine({ machine, context: context ?? null }));
    else {
      io.out(
        `Machine "${machine.name}" (${machine.id}) is ${machine.phase} in Cluster "${
          machine.cluster_name ?? ""
        }" (${machine.cluster_id ?? "unknown"}), subnet ${machine.subnet ?? "unknown"}\n`,
      );
      if (context !== undefined) io.out(`Saved context "${context}" for it\n`);
    }
    return 0;
  },
};
