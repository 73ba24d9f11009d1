// `ployz stop PROJECT/SERVICE`.
import type { Command } from "../../lib/cli/mod.ts";
import { lifecycle } from "./lifecycle.ts";

/** `ployz stop`. */
export const stopCommand: Command = {
  name: "stop",
  summary: "Stop a Service's containers (they are kept)",
  usage: "PROJECT/SERVICE [--machine M] [--request-key KEY] [--json]",
  positionals: [1, 1],
  options: { json: { type: "boolean" }, machine: { type: "string" }, "request-key": { type: "string" } },
  run: (ctx) => lifecycle(ctx, "stop"),
};
