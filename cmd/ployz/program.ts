import type { Command } from "../../lib/cli/mod.ts";
import { versionCommand } from "../shared_version.ts";
import { labCommand } from "./lab.ts";

/** The `ployz` command tree: the operator's CLI. */
export const ployz: Command = {
  name: "ployz",
  summary: "Run containers across your own Machines",
  subcommands: [labCommand, versionCommand("ployz")],
};

/** The permission set a `ployz` command runs under. */
export function commandSet(command: string | undefined): string {
  return command === "lab" ? "lab" : "cli";
}
