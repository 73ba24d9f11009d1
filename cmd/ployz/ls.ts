// `ployz ls`: Projects and Services across every Machine the Entry Machine knows of, with container counts and
// the Machines they run on; Machines that did not answer or were not asked are named (a Partial Result).
import type { Command } from "../../lib/cli/mod.ts";
import type { ListContainersResponse } from "../../lib/rpc/mod.ts";
import { askAll, clusterTargets, partialJson, partialLines, requireAnyAnswer } from "./cluster_targets.ts";
import { jsonLine } from "./connect.ts";
import { table } from "./table.ts";
import { sharedOptions, stringFlag } from "./flags.ts";

/** `ployz ls`. */
export const lsCommand: Command = {
  name: "ls",
  summary: "List Projects and their Services across the Cluster",
  usage: "[--machine M] [--json]",
  options: sharedOptions("json", "machine"),
  async run({ values, io }): Promise<number> {
    using targets = await clusterTargets({ machine: stringFlag(values, "machine") });
    const result = await askAll<ListContainersResponse>(
      targets,
      (client, _m, signal) => client.listContainers({}, { signal }),
    );
    requireAnyAnswer(result, "list Services");
    const services = new Map<
      string,
      {
        project: string;
        service: string;
        running: number;
        total: number;
        images: Set<string>;
        machines: Set<string>;
      }
    >();
    for (const answer of result.successes) {
      for (const c of answer.value.containers) {
        if (c.slot === "hook") continue;
        const key = `${c.project}/${c.service}`;
        const s = services.get(key) ??
          {
            project: c.project,
            service: c.service,
            running: 0,
            total: 0,
            images: new Set<string>(),
            machines: new Set<string>(),
          };
        s.total++;
        if (c.state === "running") s.running++;
        s.images.add(c.image);
        s.machines.add(answer.machine.name);
        services.set(key, s);
      }
    }
    const rows = [...services.values()].sort((a, b) =>
      `${a.project}/${a.service}`.localeCompare(`${b.project}/${b.service}`)
    );
    if (values.json === true) {
      io.out(jsonLine({
        entry: { "machine_id": targets.entry.id, "machine_name": targets.entry.name },
        services: rows.map((s) => ({ ...s, images: [...s.images].sort(), machines: [...s.machines].sort() })),
        ...partialJson(result),
      }));
      return 0;
    }
    io.out(table(
      ["PROJECT", "SERVICE", "RUNNING", "IMAGE", "MACHINES"],
      rows.map((s) => [
        s.project,
        s.service,
        `${s.running}/${s.total}`,
        [...s.images].sort().join(","),
        [...s.machines].sort().join(","),
      ]),
    ));
    for (const line of partialLines(result)) io.err(`${line}\n`);
    return 0;
  },
};
