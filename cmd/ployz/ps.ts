// `ployz ps`: every Machine's own containers, optionally of one Project, asked through the Entry Machine and folded
// into a Partial Result; `--machine M` asks only M.
import type { Command, Io } from "../../lib/cli/mod.ts";
import type { ObservedContainerView } from "../../lib/deploy/mod.ts";
import type { ListContainersResponse } from "../../lib/rpc/mod.ts";
import { askAll, clusterTargets, partialJson, partialLines, requireAnyAnswer } from "./cluster_targets.ts";
import { jsonLine } from "./connect.ts";
import { sharedOptions, stringFlag } from "./flags.ts";
import { table } from "./table.ts";

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
  usage: "[PROJECT] [--machine M] [--json]",
  description: [
    "The containers of every Machine the Entry Machine knows of, each asked (through it) for its own, with the",
    "Machine named on each row; --machine M asks only M (--all-machines, the default, is accepted).",
    "Each Machine is reported on standard error as it answers; Machines that did not answer, and Machines not",
    "asked, are listed at the end (in --json, under failures and omissions).",
  ],
  positionals: [0, 1],
  options: sharedOptions("json", "all-machines", "machine"),
  async run({ values, positionals, io }): Promise<number> {
    const machine = stringFlag(values, "machine");
    return await psAll(io, { project: positionals[0], machine, json: values.json === true });
  },
};

function sortContainers(list: readonly ObservedContainerView[]): ObservedContainerView[] {
  return [...list].sort((a, b) =>
    `${a.project}/${a.service}/${a.slot.padStart(4)}`.localeCompare(
      `${b.project}/${b.service}/${b.slot.padStart(4)}`,
    )
  );
}

/** `ployz ps`: one fan-out of `ployz.container.list.v1`, each Machine told as it answers. */
async function psAll(
  io: Io,
  options: { project?: string; machine?: string; json: boolean },
): Promise<number> {
  using targets = await clusterTargets({ machine: options.machine });
  const started = performance.now();
  const result = await askAll<ListContainersResponse>(
    targets,
    (client, _m, signal) =>
      client.listContainers(options.project === undefined ? {} : { project: options.project }, { signal }),
    undefined,
    (o) => {
      if (o.kind !== "success") return;
      io.err(
        `Machine "${o.machine.name}" answered: ${o.value.containers.length} container(s) in ${
          Math.round(performance.now() - started)
        } ms\n`,
      );
    },
  );
  requireAnyAnswer(result, "list containers");
  if (options.json) {
    io.out(jsonLine({
      entry: { "machine_id": targets.entry.id, "machine_name": targets.entry.name },
      machines: result.successes.map((s) => ({
        "machine_id": s.machine.id,
        "machine_name": s.machine.name,
        "observed_at": s.value.observed_at,
        containers: sortContainers(s.value.containers),
      })),
      ...partialJson(result),
    }));
    return 0;
  }
  const rows = result.successes.flatMap((s) =>
    sortContainers(s.value.containers).map((c) => ({ machine: s.machine.name, c }))
  ).sort((a, b) =>
    `${a.c.project}/${a.c.service}/${a.c.slot.padStart(4)}/${a.machine}`.localeCompare(
      `${b.c.project}/${b.c.service}/${b.c.slot.padStart(4)}/${b.machine}`,
    )
  );
  io.out(table(
    ["PROJECT", "SERVICE", "SLOT", "NAME", "IMAGE", "STATE", "HEALTH", "PORTS", "MACHINE"],
    rows.map(({ machine, c }) => [
      c.project,
      c.service,
      c.slot,
      c.name,
      c.image,
      c.exit_code !== null && c.state !== "running" ? `${c.state} (${c.exit_code})` : c.state,
      c.health,
      ports(c),
      machine,
    ]),
  ));
  for (const line of partialLines(result)) io.err(`${line}\n`);
  return 0;
}
