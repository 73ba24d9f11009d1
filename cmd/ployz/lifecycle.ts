// Shared by `ployz start` and `ployz stop`: act on every container of a Service and report each result.
import { CliError, type CommandContext } from "../../lib/cli/mod.ts";
import { errorBody } from "../../lib/deploy/mod.ts";
import { jsonLine, parseTarget, withMachine } from "./connect.ts";

/** Starts or stops each container of `PROJECT/SERVICE`; a failure of one does not stop the others. */
export async function lifecycle(ctx: CommandContext, action: "start" | "stop"): Promise<number> {
  const { project, service } = parseTarget(ctx.positionals[0], true);
  const json = ctx.values.json === true;
  return await withMachine(async (client) => {
    const list = await client.listContainers({ project, service });
    const containers = list.containers.filter((c) => c.slot !== "hook");
    if (containers.length === 0) {
      throw new CliError("not_found", `Service "${project}/${service}" has no containers`);
    }
    let failures = 0;
    for (const c of containers) {
      try {
        const { container } = action === "start"
          ? await client.startContainer({ id: c.id })
          : await client.stopContainer({ id: c.id });
        if (json) ctx.io.out(jsonLine({ id: c.id, name: c.name, ok: true, state: container.state }));
        else ctx.io.out(`${action === "start" ? "Started" : "Stopped"} ${c.name} (${container.state})\n`);
      } catch (error) {
        failures++;
        const body = errorBody(error);
        if (json) ctx.io.out(jsonLine({ id: c.id, name: c.name, ok: false, error: body }));
        else ctx.io.out(`Failed to ${action} ${c.name}: error[${body.code}]: ${body.message}\n`);
      }
    }
    return failures === 0 ? 0 : 1;
  });
}
