// `ployz image`: the image commands, grouped.
import type { Command } from "../../lib/cli/mod.ts";
import { imageCopyCommand } from "./image_copy.ts";

/** `ployz image`. */
export const imageCommand: Command = {
  name: "image",
  summary: "Move images between Machines",
  subcommands: [imageCopyCommand],
};
