// `ployz start PROJECT/SERVICE`.
import type { Command } from "../../lib/cli/mod.ts";
import { lifecycle } from "./lifecycle.ts";

/** `ployz start`. */
export const startCommand: Command = {
  name: "start",
  summary: "Start a Service's containers",
  usage: "PROJECT/SERVICE [--machine M] [--request-key KEY] [--json]",
  positionals: [1, 1],
  options: { json: { type: "boolean" }, machine: { type: "string" }, "request-key": { type: "string" } },
  run: (ctx) => lifecycle(ctx, "start"),
};
