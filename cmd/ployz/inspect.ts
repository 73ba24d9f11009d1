// `ployz inspect PROJECT/SERVICE`: the Service as the Saved State asks for it and as every Machine observes it.
import { CliError } from "../../lib/cli/mod.ts";
import type { Command } from "../../lib/cli/mod.ts";
import type { NormalizedProject } from "../../lib/deploy/mod.ts";
import type { ListContainersResponse } from "../../lib/rpc/mod.ts";
import { askAll, clusterTargets, partialJson, partialLines, requireAnyAnswer } from "./cluster_targets.ts";
import { jsonLine, openConfig, parseTarget } from "./connect.ts";
import { table } from "./table.ts";
import { sharedOptions, stringFlag } from "./flags.ts";

/** `ployz inspect`. */
export const inspectCommand: Command = {
  name: "inspect",
  summary: "Show one Service",
  usage: "PROJECT/SERVICE [--machine M] [--json]",
  positionals: [1, 1],
  options: sharedOptions("json", "machine"),
  async run({ values, positionals, io }): Promise<number> {
    const { project, service } = parseTarget(positionals[0], true);
    using config = openConfig();
    const saved = (config.savedState(project)?.compose as NormalizedProject | undefined)?.services[service!];
    using targets = await clusterTargets({ machine: stringFlag(values, "machine") });
    const result = await askAll<ListContainersResponse>(
      targets,
      (client, _m, signal) => client.listContainers({ project, service }, { signal }),
    );
    requireAnyAnswer(result, `inspect "${project}/${service}"`);
    const containers = result.successes.flatMap((s) =>
      s.value.containers.map((c) => ({ ...c, "machine_name": s.machine.name }))
    ).sort((a, b) =>
      a.slot.padStart(4).localeCompare(b.slot.padStart(4)) || a.machine_name.localeCompare(b.machine_name)
    );
    if (saved === undefined && containers.length === 0) {
      throw new CliError("not_found", `Service "${project}/${service}" is neither saved nor observed`);
    }
    if (values.json === true) {
      io.out(
        jsonLine({
          project,
          service,
          saved: saved ?? null,
          observed: result.successes.map((s) => ({
            "machine_name": s.machine.name,
            "observed_at": s.value.observed_at,
          })),
          containers,
          ...partialJson(result),
        }),
      );
      return 0;
    }
    io.out(`Service "${project}/${service}"\n`);
    if (saved !== undefined) {
      io.out(`  image:    ${saved.image}\n  replicas: ${saved.replicas ?? "global"}\n`);
      const ports = saved.ports.map((p) =>
        p.kind === "host"
          ? `${p.publishedPort}:${p.containerPort}/${p.protocol}`
          : `${p.hostname ?? ""}:${p.containerPort}/${p.protocol}`
      );
      if (ports.length > 0) io.out(`  ports:    ${ports.join(", ")}\n`);
    } else io.out("  (no Saved State)\n");
    io.out(`Observed by ${result.successes.map((s) => `"${s.machine.name}"`).join(", ")}:\n`);
    io.out(table(
      ["SLOT", "NAME", "STATE", "HEALTH", "ADDRESSES", "DEPLOYMENT", "IMAGE DIGEST", "MACHINE"],
      containers.map((
        c,
      ) => [
        c.slot,
        c.name,
        c.state,
        c.health,
        c.addresses.join(","),
        c.deployment.slice(0, 8),
        // The digest the container runs (its image reference is pinned), else its local image id.
        (c.image.includes("@") ? c.image.slice(c.image.lastIndexOf("@") + 1) : c.image_id).slice(0, 19),
        c.machine_name,
      ]),
    ));
    for (const line of partialLines(result)) io.err(`${line}\n`);
    return 0;
  },
};
