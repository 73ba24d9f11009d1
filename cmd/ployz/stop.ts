// `ployz stop PROJECT/SERVICE`.
import type { Command } from "../../lib/cli/mod.ts";
import { lifecycleCommand } from "./lifecycle.ts";

/** `ployz stop`. */
export const stopCommand: Command = lifecycleCommand("stop", "Stop a Service's containers (they are kept)");
