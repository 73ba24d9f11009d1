// `ployz logs PROJECT/SERVICE`: Docker's logs of the Service's containers, one prefix per container.
import { CliError } from "../../lib/cli/mod.ts";
import type { Command } from "../../lib/cli/mod.ts";
import { parseTarget, withMachine } from "./connect.ts";

/** `ployz logs`. */
export const logsCommand: Command = {
  name: "logs",
  summary: "Show a Service's logs",
  usage: "PROJECT/SERVICE [-f] [--tail N]",
  positionals: [1, 1],
  options: { follow: { type: "boolean", short: "f" }, tail: { type: "string", short: "n" } },
  async run({ values, positionals, io }): Promise<number> {
    const { project, service } = parseTarget(positionals[0], true);
    const tail = values.tail === undefined ? undefined : Number(values.tail);
    if (tail !== undefined && (!Number.isInteger(tail) || tail < 0)) {
      throw new CliError(
        "invalid_argument",
        `Invalid value "${values.tail}" for "--tail": expected a whole number`,
        {
          exitCode: 2,
        },
      );
    }
    return await withMachine(async (client) => {
      const list = await client.listContainers({ project, service });
      const containers = list.containers.filter((c) => c.slot !== "hook");
      if (containers.length === 0) {
        throw new CliError("not_found", `Service "${project}/${service}" has no containers`);
      }
      const prefix = containers.length > 1;
      await Promise.all(containers.map(async (c) => {
        const stream = await client.containerLogs({ id: c.id, tail, follow: values.follow === true });
        let pending = "";
        const emit = (line: string): void => io.out(prefix ? `${c.name} | ${line}\n` : `${line}\n`);
        for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
          pending += chunk;
          const lines = pending.split("\n");
          pending = lines.pop()!;
          lines.forEach(emit);
        }
        if (pending !== "") emit(pending);
      }));
      return 0;
    });
  },
};
