// `ployz machine add`: join another Machine to the local Machine's Cluster (the local Machine is the Entry Machine).
import { CliError, type Command, UsageError } from "../../lib/cli/mod.ts";
import { configHistory, enrollMachine } from "../../lib/mesh/mod.ts";
import { cliError, jsonLine, localMachine, openConfig } from "./connect.ts";
import { collisionLines } from "./machine_ls.ts";
import { targetMachine } from "./machine_target.ts";

function seconds(value: unknown): number {
  if (value === undefined) return 60;
  const n = Number(value);
  if (typeof value !== "string" || !Number.isFinite(n) || n <= 0 || n > 3600) {
    throw new UsageError(`Invalid --timeout "${String(value)}": expected seconds above 0, at most 3600`);
  }
  return n;
}

/** `ployz machine add`. */
export const machineAddCommand: Command = {
  name: "add",
  summary: "Join another Machine to this Cluster (over SSH, or its socket with --socket)",
  usage: "[SSH_DEST] [--socket PATH] [--name NAME] [--timeout SECONDS] [--json]",
  description: [
    "The local Machine is the Entry Machine. The new Machine's /24 is picked from what the Entry Machine observes",
    "plus this operator's allocation history (saved before it is published, kept after failures). The command waits",
    "(--timeout, default 60 s) until the new Machine's store caught up and it participates.",
  ].join("\n"),
  options: {
    socket: { type: "string" },
    name: { type: "string" },
    timeout: { type: "string" },
    json: { type: "boolean" },
  },
  positionals: [0, 1],
  async run({ values, positionals, io }): Promise<number> {
    const timeoutMs = seconds(values.timeout) * 1000;
    const joiner = targetMachine({
      socket: typeof values.socket === "string" ? values.socket : undefined,
      ssh: positionals[0],
      what: "the Machine to add",
    });
    const entry = localMachine();
    const config = openConfig();
    try {
      const result = await enrollMachine({
        entry,
        joiner,
        history: configHistory(config),
        machineName: typeof values.name === "string" ? values.name : undefined,
        timeoutMs,
        progress: values.json === true ? undefined : (line) => io.err(`${line}\n`),
      });
      if (values.json === true) {
        io.out(jsonLine({
          machine: result.machine,
          entry: { id: result.entry.id, name: result.entry.name },
          subnet: result.subnet,
          "reused_allocation": result.reusedAllocation,
          "already_member": result.alreadyMember,
          participating: result.participating,
          "participating_after_ms": result.participatingAfterMs,
          "entry_holds_row": result.entryHoldsRow,
          "subnet_collisions": result.collisions,
        }));
      } else {
        const m = result.machine;
        io.out(
          result.participating
            ? `Machine "${m.name}" (${m.id}) participates in Cluster "${m.cluster_name}" with subnet ${result.subnet} after ${
              ((result.participatingAfterMs ?? 0) / 1000).toFixed(1)
            } s; "${result.entry.name}" ${result.entryHoldsRow ? "holds" : "does not hold yet"} its row\n`
            : `Machine "${m.name}" (${m.id}) is still ${m.phase} after ${
              timeoutMs / 1000
            } s: it keeps catching up on its own; check with "ployz machine ls"\n`,
        );
        io.out(collisionLines(result.collisions));
      }
      if (!result.participating) {
        throw new CliError(
          "unavailable",
          `Machine "${result.machine.name}" did not report participating in time`,
        );
      }
      return 0;
    } catch (error) {
      throw cliError(error);
    } finally {
      joiner.close();
      entry.close();
      config.close();
    }
  },
};
