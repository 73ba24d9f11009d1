// `ployz image copy REF --from M --to M`: the target Machine fetches the image from the source over the mesh
// (`ployz.image.pull_from_peer.v1`) and loads it; the CLI asks through its Entry Machine and reports bytes and time.
import { CliError, type Command } from "../../lib/cli/mod.ts";
import { CAPABILITIES, type FanOutTarget, type MachineClient, PEER_PULL_MAX_MS } from "../../lib/rpc/mod.ts";
import { clusterTargets } from "./cluster_targets.ts";
import { cliError, jsonLine } from "./connect.ts";

const DEFAULT_TIMEOUT_S = 600;

function pick(
  targets: readonly FanOutTarget<MachineClient>[],
  wanted: string,
  flag: string,
): FanOutTarget<MachineClient> {
  const byId = targets.filter((t) => t.id === wanted);
  const found = byId.length > 0
    ? byId
    : targets.filter((t) => t.name === wanted || (wanted.length >= 4 && t.id.startsWith(wanted)));
  if (found.length === 0) {
    throw new CliError(
      "not_found",
      `No Machine "${wanted}" for "${flag}" among the Machines the Entry Machine holds`,
    );
  }
  if (found.length > 1) {
    throw new CliError(
      "ambiguous",
      `Machine "${wanted}" for "${flag}" matches ${found.length} Machines (${
        found.map((t) => t.id).join(", ")
      }): give an id`,
    );
  }
  return found[0];
}

function megabytes(bytes: number): string {
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}

/** `ployz image copy`. */
export const imageCopyCommand: Command = {
  name: "copy",
  summary: "Copy an image from one Machine to another over the mesh",
  usage: "REF --from MACHINE --to MACHINE [--timeout SECONDS] [--json]",
  description: [
    "The --to Machine asks the --from Machine for a docker save of REF over the mesh and loads it; nothing is",
    "fetched when --to already has it. Machines are named by name, id or id prefix, as the Entry Machine (the one",
    "this CLI is attached to) holds them. --timeout bounds the whole transfer (default 600 s).",
  ].join("\n"),
  positionals: [1, 1],
  options: {
    from: { type: "string" },
    to: { type: "string" },
    timeout: { type: "string" },
    json: { type: "boolean" },
  },
  async run({ values, positionals, io }): Promise<number> {
    const ref = positionals[0];
    const from = typeof values.from === "string" ? values.from : undefined;
    const to = typeof values.to === "string" ? values.to : undefined;
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
    const source = pick(targets.targets, from, "--from");
    const target = pick(targets.targets, to, "--to");
    if (source.id === target.id) {
      throw new CliError("invalid_argument", `"--from" and "--to" name the same Machine "${source.name}"`, {
        exitCode: 2,
      });
    }
    if (!("client" in target)) {
      throw new CliError("unavailable", `Cannot reach Machine "${target.name}": ${target.omitted}`);
    }
    try {
      await target.client.requireCapability(CAPABILITIES.pullImageFromPeer);
      const answer = await target.client.pullImageFromPeer(
        { ref, "from_machine_id": source.id, "timeout_ms": seconds * 1000 },
        { signal: AbortSignal.timeout(seconds * 1000 + 30_000) },
      );
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
      throw cliError(error);
    }
  },
};
