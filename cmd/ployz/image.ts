// `ployz image`: the image commands, grouped.
import type { Command } from "../../lib/cli/mod.ts";
import { imageCopyCommand } from "./image_copy.ts";
import { imageLsCommand, imagePruneCommand } from "./image_list.ts";

/** `ployz image`. */
export const imageCommand: Command = {
  name: "image",
  summary: "List, prune and move images on the Cluster's Machines",
  subcommands: [imageLsCommand, imagePruneCommand, imageCopyCommand],
};
