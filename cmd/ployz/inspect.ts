// `ployz inspect PROJECT/SERVICE`: the Service as the Saved State asks for it and as the Machine observes it.
import { CliError } from "../../lib/cli/mod.ts";
import type { Command } from "../../lib/cli/mod.ts";
import type { NormalizedProject } from "../../lib/deploy/mod.ts";
import { jsonLine, openConfig, parseTarget, withMachine } from "./connect.ts";
import { table } from "./ps.ts";

/** `ployz inspect`. */
export const inspectCommand: Command = {
  name: "inspect",
  summary: "Show one Service",
  usage: "PROJECT/SERVICE [--json]",
  positionals: [1, 1],
  options: { json: { type: "boolean" } },
  async run({ values, positionals, io }): Promise<number> {
    const { project, service } = parseTarget(positionals[0], true);
    const config = openConfig();
    let saved;
    try {
      saved = (config.savedState(project)?.compose as NormalizedProject | undefined)?.services[service!];
    } finally {
      config.close();
    }
    const list = await withMachine((client) => client.listContainers({ project, service }));
    if (saved === undefined && list.containers.length === 0) {
      throw new CliError("not_found", `Service "${project}/${service}" is neither saved nor observed`);
    }
    if (values.json === true) {
      io.out(
        jsonLine({
          project,
          service,
          saved: saved ?? null,
          observed_at: list.observed_at,
          containers: list.containers,
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
    io.out(`Observed at ${list.observed_at}:\n`);
    io.out(table(
      ["SLOT", "NAME", "STATE", "HEALTH", "ADDRESSES", "DEPLOYMENT"],
      list.containers.map((
        c,
      ) => [c.slot, c.name, c.state, c.health, c.addresses.join(","), c.deployment.slice(0, 8)]),
    ));
    return 0;
  },
};
