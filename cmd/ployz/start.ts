// `ployz start PROJECT/SERVICE`.
import type { Command } from "../../lib/cli/mod.ts";
import { lifecycleCommand } from "./lifecycle.ts";

/** `ployz start`. */
export const startCommand: Command = lifecycleCommand("start", "Start a Service's containers");
