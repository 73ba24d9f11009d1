// `ployz machine`: the Machine commands, grouped.
import type { Command } from "../../lib/cli/mod.ts";
import { machineAddCommand } from "./machine_add.ts";
import { machineInitCommand } from "./machine_init.ts";
import { machineLsCommand } from "./machine_ls.ts";
import { machineRmCommand } from "./machine_rm.ts";
import { machineUpgradeCommand } from "./machine_upgrade.ts";

/** `ployz machine`. */
export const machineCommand: Command = {
  name: "machine",
  summary: "Manage Machines",
  subcommands: [
    machineInitCommand,
    machineAddCommand,
    machineLsCommand,
    machineRmCommand,
    machineUpgradeCommand,
  ],
};
