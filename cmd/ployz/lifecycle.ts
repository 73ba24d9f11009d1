// Shared by `ployz start` and `ployz stop`: act on every container of a Service on every Machine (or `--machine M`)
// and report each result; a Machine that did not answer is named, and the command exits 1.
import { CliError, type CommandContext } from "../../lib/cli/mod.ts";
import { errorBody } from "../../lib/deploy/mod.ts";
import type { ListContainersResponse } from "../../lib/rpc/mod.ts";
import { askAll, clusterTargets, partialLines, requireAnyAnswer } from "./cluster_targets.ts";
import { jsonLine, parseTarget } from "./connect.ts";

/** Starts or stops each container of `PROJECT/SERVICE`; a failure of one does not stop the others. */
export async function lifecycle(ctx: CommandContext, action: "start" | "stop"): Promise<number> {
  const { project, service } = parseTarget(ctx.positionals[0], true);
  const json = ctx.values.json === true;
  using targets = await clusterTargets({
    machine: typeof ctx.values.machine === "string" ? ctx.values.machine : undefined,
  });
  const listed = await askAll<ListContainersResponse>(
    targets,
    (client, _m, signal) => client.listContainers({ project, service }, { signal }),
  );
  requireAnyAnswer(listed, `list "${project}/${service}"`);
  const work = listed.successes.flatMap((s) =>
    s.value.containers.filter((c) => c.slot !== "hook").map((c) => ({ machine: s.machine, c }))
  );
  if (work.length === 0) {
    throw new CliError(
      "not_found",
      `Service "${project}/${service}" has no containers on the Machines that answered`,
    );
  }
  const clients = new Map(targets.targets.flatMap((t) => "client" in t ? [[t.id, t.client] as const] : []));
  let failures = 0;
  for (const { machine, c } of work) {
    const client = clients.get(machine.id)!;
    try {
      const { container } = action === "start"
        ? await client.startContainer({ id: c.id })
        : await client.stopContainer({ id: c.id });
      if (json) {
        ctx.io.out(
          jsonLine({
            id: c.id,
            name: c.name,
            "machine_name": machine.name,
            ok: true,
            state: container.state,
          }),
        );
      } else {
        ctx.io.out(
          `${
            action === "start" ? "Started" : "Stopped"
          } ${c.name} on "${machine.name}" (${container.state})\n`,
        );
      }
    } catch (error) {
      failures++;
      const body = errorBody(error);
      if (json) {
        ctx.io.out(
          jsonLine({ id: c.id, name: c.name, "machine_name": machine.name, ok: false, error: body }),
        );
      } else {ctx.io.out(
          `Failed to ${action} ${c.name} on "${machine.name}": error[${body.code}]: ${body.message}\n`,
        );}
    }
  }
  const partial = partialLines(listed);
  for (const line of partial) ctx.io.err(`${line}\n`);
  return failures === 0 && partial.length === 0 ? 0 : 1;
}
