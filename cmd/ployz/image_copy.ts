// `ployz image copy REF --from M --to M`: lib/operator's copyImage (the target Machine fetches the image from the
// source over the mesh); this file parses and prints bytes and time.
import { CliError, type Command } from "../../lib/cli/mod.ts";
import { copyImage } from "../../lib/operator/mod.ts";
import { PEER_PULL_MAX_MS } from "../../lib/rpc/mod.ts";
import { clusterTargets } from "./cluster_targets.ts";
import { cliError, jsonLine } from "./connect.ts";
import { sharedOptions, stringFlag } from "./flags.ts";
import { megabytes } from "./units.ts";

const DEFAULT_TIMEOUT_S = 600;

/** `ployz image copy`. */
export const imageCopyCommand: Command = {
  name: "copy",
  summary: "Copy an image from one Machine to another over the mesh",
  usage: "REF --from MACHINE --to MACHINE [--timeout SECONDS] [--json]",
  description: [
    "The --to Machine asks the --from Machine for a docker save of REF over the mesh and loads it; nothing is",
    "fetched when --to already has it. Machines are named by name, id or id prefix, as the Entry Machine (the one",
    "this CLI is attached to) holds them. --timeout bounds the whole transfer (default 600 s).",
  ],
  positionals: [1, 1],
  options: { from: { type: "string" }, to: { type: "string" }, ...sharedOptions("timeout", "json") },
  async run({ values, positionals, io }): Promise<number> {
    const ref = positionals[0];
    const from = stringFlag(values, "from");
    const to = stringFlag(values, "to");
    if (from === undefined || to === undefined) {
      throw new CliError("invalid_argument", 'Give both "--from" and "--to"', { exitCode: 2 });
    }
    const seconds = values.timeout === undefined ? DEFAULT_TIMEOUT_S : Number(values.timeout);
    if (!Number.isInteger(seconds) || seconds < 1 || seconds * 1000 > PEER_PULL_MAX_MS) {
      throw new CliError(
        "invalid_argument",
        `Invalid value "${String(values.timeout)}" for "--timeout": expected whole seconds from 1 to ${
          PEER_PULL_MAX_MS / 1000
        }`,
        { exitCode: 2 },
      );
    }
    using targets = await clusterTargets();
    try {
      const { source, target, answer } = await copyImage(targets.targets, {
        ref,
        from,
        to,
        timeoutMs: seconds * 1000,
      });
      if (values.json === true) {
        io.out(jsonLine({ ...answer, "from_machine_name": source.name, "machine_name": target.name }));
      } else if (!answer.transferred) {
        io.out(`Machine "${target.name}" already has image "${ref}": nothing copied\n`);
      } else {
        const rate = answer.duration_ms > 0 ? answer.bytes / 1_000_000 / (answer.duration_ms / 1000) : 0;
        io.out(
          `Copied image "${ref}" from "${source.name}" to "${target.name}": ${
            megabytes(answer.bytes)
          } in ${answer.duration_ms} ms (${rate.toFixed(1)} MB/s)\n`,
        );
      }
      return 0;
    } catch (error) {
      const e = cliError(error);
      // Naming one Machine for both ends is a usage mistake.
      throw e.code === "invalid_argument"
        ? new CliError(e.code, e.message, { details: e.details, exitCode: 2 })
        : e;
    }
  },
};
