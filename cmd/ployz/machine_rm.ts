// `ployz machine rm`: ask a Machine to leave its Cluster. Only a Machine writes its own row, so removal is that
// Machine tombstoning its row and taking down its interface; a Machine this command cannot reach is refused,
// never deleted on its behalf. A Machine gone for good is removed with `--gone` instead: any Machine writes a
// retired mark that every Machine's readers honour (its rows leave every view, peers refuse it).
import { CliError, type Command, UsageError } from "../../lib/cli/mod.ts";
import { RpcError } from "../../lib/rpc/mod.ts";
import { listedMachine, retireGone } from "../../lib/operator/mod.ts";
import { cliError, entryMachine, jsonLine, openConfig } from "./connect.ts";
import { receiptBook, requestKey } from "./receipts.ts";
import { targetMachine } from "./machine_target.ts";
import { sharedOptions, stringFlag } from "./flags.ts";

/** `ployz machine rm`. */
export const machineRmCommand: Command = {
  name: "rm",
  summary: "Ask a Machine to leave the Cluster (its row is tombstoned by itself)",
  usage:
    "NAME|ID [SSH_DEST] [--socket PATH] [--gone [--request-key KEY]] [--confirm-data-loss NAME] [--json]",
  description: [
    "The Machine is found in the local Machine's observation, then reached over SSH or --socket and asked to leave.",
    "If it runs Ployz containers they are removed: confirm with --confirm-data-loss NAME.",
    "--gone: the Machine is gone for good and does not answer. It is marked retired from the Machine this CLI",
    "reaches: peers refuse it and its rows leave every view; its subnet stays retired in the allocation history.",
    "If it comes back, peers answer it only to tell it who removed it and when, and it stops syncing. What its",
    "rows held is lost: confirm with --confirm-data-loss NAME.",
  ],
  options: {
    gone: { type: "boolean" },
    ...sharedOptions("request-key"),
    socket: { type: "string" },
    "confirm-data-loss": { type: "string" },
    ...sharedOptions("json"),
  },
  positionals: [1, 2],
  async run({ values, positionals, io }): Promise<number> {
    const [wanted, ssh] = positionals;
    const socket = stringFlag(values, "socket");
    if (values.gone === true) {
      if (socket !== undefined || ssh !== undefined) {
        throw new UsageError(
          `"--gone" reaches no Machine of its own: give neither an SSH destination nor --socket`,
        );
      }
      const confirm = values["confirm-data-loss"];
      using config = openConfig();
      const gone = entryMachine();
      try {
        const key = requestKey(values["request-key"], `machine-rm-gone-${wanted}`);
        const report = await retireGone(gone, wanted, {
          confirmDataLoss: typeof confirm === "string" ? confirm : undefined,
          book: config,
          receipts: receiptBook<unknown>(config, key),
        });
        if (values.json === true) io.out(jsonLine({ ...report, "request_key": key }));
        else {
          io.out(
            `Machine "${report.machine.name}" (${report.machine.id}) removed as gone: its peers refuse it ` +
              `and its rows leave every view${
                report.observed === undefined ? "" : ` (${report.observed})`
              }; lost with it: ${report.containers.length} container(s), ` +
              `${report.volumes.length} volume(s)${
                report.machine.subnet === undefined
                  ? ""
                  : `; subnet ${report.machine.subnet} kept retired in the allocation history`
              }\nrequest key: ${key}\n`,
          );
        }
        return 0;
      } catch (error) {
        if (
          error instanceof RpcError && error.code === "conflict" && Array.isArray(error.details.containers)
        ) {
          throw new CliError("conflict", `${error.message}: pass --confirm-data-loss ${wanted}`, {
            details: error.details,
          });
        }
        throw cliError(error);
      } finally {
        gone.close();
      }
    }
    const entry = entryMachine();
    try {
      const list = await entry.listMachines();
      const row = listedMachine(list, wanted);
      if (socket === undefined && ssh === undefined) {
        throw new UsageError(
          `Cannot remove Machine "${row.name}" (${row.id}): only it can tombstone its own row, so it must be reached; give its SSH destination or --socket PATH (nothing was changed)`,
        );
      }
      const target = targetMachine({ socket, ssh, what: `Machine "${row.name}"` });
      try {
        let reached;
        try {
          reached = (await target.status()).machine;
        } catch (error) {
          if (error instanceof RpcError && error.code === "unavailable") {
            throw new CliError(
              "unavailable",
              `Cannot remove Machine "${row.name}" (${row.id}): it did not answer (${error.message}); its row stays in the Cluster because only it writes it, and nothing was changed`,
            );
          }
          throw error;
        }
        if (reached.id !== row.id) {
          throw new CliError(
            "conflict",
            `Refusing to remove: the Machine reached is "${reached.name}" (${reached.id}), not "${row.name}" (${row.id})`,
          );
        }
        const confirm = values["confirm-data-loss"];
        let left;
        try {
          left = await target.leaveMachine(
            typeof confirm === "string" ? { "confirm_data_loss": confirm } : {},
          );
        } catch (error) {
          if (
            error instanceof RpcError && error.code === "conflict" && Array.isArray(error.details.containers)
          ) {
            throw new CliError("conflict", `${error.message}: pass --confirm-data-loss ${row.name}`, {
              details: error.details,
            });
          }
          throw error;
        }
        if (values.json === true) io.out(jsonLine(left));
        else {
          io.out(
            `Machine "${row.name}" (${row.id}) left the Cluster: removed ${left.removed_containers.length} container(s); tombstone delivered to ${left.tombstone_delivered_to.length} peer(s)${
              left.tombstone_not_delivered_to.length > 0
                ? `, not to ${left.tombstone_not_delivered_to.join(", ")} (it spreads from the others)`
                : ""
            }; interface ${left.interface_removed ? "removed" : "not removed"}\n`,
          );
        }
        return 0;
      } finally {
        target.close();
      }
    } catch (error) {
      throw cliError(error);
    } finally {
      entry.close();
    }
  },
};
