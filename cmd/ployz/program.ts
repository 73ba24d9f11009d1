import type { Command } from "../../lib/cli/mod.ts";
import { versionCommand } from "../shared_version.ts";
import { deployCommand } from "./deploy.ts";
import { imageCommand } from "./image.ts";
import { inspectCommand } from "./inspect.ts";
import { labCommand } from "./lab.ts";
import { logsCommand } from "./logs.ts";
import { lsCommand } from "./ls.ts";
import { machineCommand } from "./machine.ts";
import { metricsCommand } from "./metrics.ts";
import { psCommand } from "./ps.ts";
import { rmCommand } from "./rm.ts";
import { scaleCommand } from "./scale.ts";
import { startCommand } from "./start.ts";
import { stopCommand } from "./stop.ts";
import { topCommand } from "./top.ts";

/** The `ployz` command tree: the operator's CLI. */
export const ployz: Command = {
  name: "ployz",
  summary: "Run containers across your own Machines",
  subcommands: [
    machineCommand,
    deployCommand,
    psCommand,
    lsCommand,
    inspectCommand,
    logsCommand,
    topCommand,
    metricsCommand,
    imageCommand,
    startCommand,
    stopCommand,
    rmCommand,
    scaleCommand,
    labCommand,
    versionCommand("ployz"),
  ],
};

/** The permission set a `ployz` command runs under. */
export function commandSet(command: string | undefined): string {
  return command === "lab" ? "lab" : "cli";
}
