// `ployz ps`: the containers the local Machine observes, optionally of one Project.
import type { Command } from "../../lib/cli/mod.ts";
import type { ObservedContainerView } from "../../lib/deploy/mod.ts";
import { jsonLine, withMachine } from "./connect.ts";

/** Renders rows as aligned columns. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  return [header, ...rows].map((r) => r.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd()).join("\n") +
    "\n";
}

function ports(c: ObservedContainerView): string {
  return c.ports.map((p) =>
    `${p.host_ip ? `${p.host_ip}:` : ""}${p.host_port}->${p.container_port}/${p.protocol}`
  )
    .join(",");
}

/** `ployz ps`. */
export const psCommand: Command = {
  name: "ps",
  summary: "List containers",
  usage: "[PROJECT] [--json]",
  positionals: [0, 1],
  options: { json: { type: "boolean" } },
  async run({ values, positionals, io }): Promise<number> {
    const project = positionals[0];
    const answer = await withMachine(async (client) => {
      const status = await client.status();
      const list = await client.listContainers(project === undefined ? {} : { project });
      return { machine: status.machine, ...list };
    });
    const containers = [...answer.containers].sort((a, b) =>
      `${a.project}/${a.service}/${a.slot.padStart(4)}`.localeCompare(
        `${b.project}/${b.service}/${b.slot.padStart(4)}`,
      )
    );
    if (values.json === true) {
      io.out(jsonLine({ machine_id: answer.machine_id, observed_at: answer.observed_at, containers }));
      return 0;
    }
    io.out(table(
      ["PROJECT", "SERVICE", "SLOT", "NAME", "IMAGE", "STATE", "HEALTH", "PORTS", "MACHINE"],
      containers.map((c) => [
        c.project,
        c.service,
        c.slot,
        c.name,
        c.image,
        c.exit_code !== null && c.state !== "running" ? `${c.state} (${c.exit_code})` : c.state,
        c.health,
        ports(c),
        answer.machine.name,
      ]),
    ));
    return 0;
  },
};
