// `ployz ls`: Projects and Services the local Machine observes, with container counts.
import type { Command } from "../../lib/cli/mod.ts";
import { jsonLine, withMachine } from "./connect.ts";
import { table } from "./ps.ts";

/** `ployz ls`. */
export const lsCommand: Command = {
  name: "ls",
  summary: "List Projects and their Services",
  usage: "[--json]",
  options: { json: { type: "boolean" } },
  async run({ values, io }): Promise<number> {
    const list = await withMachine((client) => client.listContainers({}));
    const services = new Map<
      string,
      { project: string; service: string; running: number; total: number; images: Set<string> }
    >();
    for (const c of list.containers) {
      if (c.slot === "hook") continue;
      const key = `${c.project}/${c.service}`;
      const s = services.get(key) ??
        { project: c.project, service: c.service, running: 0, total: 0, images: new Set<string>() };
      s.total++;
      if (c.state === "running") s.running++;
      s.images.add(c.image);
      services.set(key, s);
    }
    const rows = [...services.values()].sort((a, b) =>
      `${a.project}/${a.service}`.localeCompare(`${b.project}/${b.service}`)
    );
    if (values.json === true) {
      io.out(jsonLine({
        observed_at: list.observed_at,
        services: rows.map((s) => ({ ...s, images: [...s.images].sort() })),
      }));
      return 0;
    }
    io.out(table(
      ["PROJECT", "SERVICE", "RUNNING", "IMAGE"],
      rows.map((s) => [s.project, s.service, `${s.running}/${s.total}`, [...s.images].sort().join(",")]),
    ));
    return 0;
  },
};
