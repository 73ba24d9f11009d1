// `ployz machine pool`: each Machine's Pool (the copy-on-write filesystem its Provisioned Volumes live in) and the
// Volume copies it holds, asked of every Machine (or `--machine M`); `--set` binds that one Machine to a Pool.
import { type Command, UsageError } from "../../lib/cli/mod.ts";
import { parseBytes } from "../../lib/deploy/mod.ts";
import {
  CAPABILITIES,
  type MachineClient,
  type MachinePoolResponse,
  type PoolSetWire,
  RpcError,
} from "../../lib/rpc/mod.ts";
import { askAll, clusterTargets, partialJson, partialLines, requireAnyAnswer } from "./cluster_targets.ts";
import { jsonLine } from "./connect.ts";
import { table } from "./table.ts";
import { sharedOptions, stringFlag } from "./flags.ts";
import { mib } from "./units.ts";

/** Parses `--set btrfs` or `--set zfs:DATASET:MOUNT_ROOT` with `--loop-size SIZE` (btrfs only). */
export function poolSet(value: string, loopSize: string | undefined): PoolSetWire {
  if (value === "btrfs") {
    if (loopSize === undefined) return { kind: "btrfs" };
    const bytes = parseBytes(loopSize);
    if (typeof bytes !== "number") throw new UsageError(`Invalid --loop-size: ${bytes.error}`);
    if (bytes < 128 * 2 ** 20) {
      throw new UsageError(`Invalid --loop-size "${loopSize}": a btrfs Pool needs 128m or more`);
    }
    return { kind: "btrfs", "loop_size_bytes": bytes };
  }
  const zfs = /^zfs:([^:]+):(\/[^:]*)$/.exec(value);
  if (zfs !== null) {
    if (loopSize !== undefined) throw new UsageError(`--loop-size is for a btrfs Pool, not ZFS`);
    return { kind: "zfs", dataset: zfs[1], "mount_root": zfs[2] };
  }
  throw new UsageError(`Invalid --set "${value}": expected "btrfs" or "zfs:DATASET:/MOUNT/ROOT"`);
}

function sizeOption(value: string): number {
  const bytes = parseBytes(value);
  if (typeof bytes !== "number") throw new UsageError(`Invalid --default-size: ${bytes.error}`);
  if (bytes < 2 ** 20) throw new UsageError(`Invalid --default-size "${value}": a Volume needs 1m or more`);
  return bytes;
}

/**
 * One Machine's `ployz.machine.pool.v1`: refused by name when its daemon predates Pools, or when it answers without
 * the default Volume size it was asked to keep (a daemon that predates the field ignores it).
 */
export async function askPool(
  client: Pick<MachineClient, "requireCapability" | "machinePool">,
  machine: string,
  change: { set?: PoolSetWire; defaultSize?: number },
  signal: AbortSignal,
): Promise<MachinePoolResponse> {
  await client.requireCapability(CAPABILITIES.machinePool, { signal });
  const answer = await client.machinePool({
    ...(change.set === undefined ? {} : { set: change.set }),
    ...(change.defaultSize === undefined ? {} : { "default_size_bytes": change.defaultSize }),
  }, { signal });
  if (change.defaultSize !== undefined && answer.pool?.default_size_bytes !== change.defaultSize) {
    throw new RpcError(
      "unsupported",
      `Machine "${machine}" did not keep the default Volume size: its daemon predates it; upgrade it`,
      { details: { machine } },
    );
  }
  return answer;
}

/** The human form of the answers. */
export function poolTable(answers: { machine: string; value: MachinePoolResponse }[]): string {
  const pools = table(
    ["MACHINE", "POOL", "WHERE", "SIZE", "FREE", "DEFAULT", "PROBLEM"],
    answers.map(({ machine, value }) => [
      machine,
      value.pool?.kind ?? "none",
      value.pool?.where ?? "-",
      mib(value.pool?.total_bytes),
      mib(value.pool?.free_bytes),
      mib(value.pool?.default_size_bytes),
      value.pool?.problem ?? (value.pool === null ? "Provisioned Volumes refused: no Pool" : "-"),
    ]),
  );
  const copies = answers.flatMap(({ machine, value }) =>
    value.volumes.map((v) => [
      v.name,
      machine,
      v.role === "writer" ? `Writer(epoch ${v.epoch ?? 0})` : `Mirror@${v.snapshot ?? "?"}`,
      mib(v.used_bytes),
      mib(v.size_bytes),
      v.snapshots.slice(-2).join(",") || "-",
    ])
  );
  if (copies.length === 0) return pools;
  return pools + "\n" + table(["VOLUME", "MACHINE", "COPY", "USED", "SIZE", "SNAPSHOTS"], copies);
}

/** `ployz machine pool`. */
export const machinePoolCommand: Command = {
  name: "pool",
  summary: "Show each Machine's Pool and Volume copies, or bind a Machine to a Pool",
  usage:
    "[--machine M] [--set btrfs [--loop-size SIZE] | --set zfs:DATASET:/MOUNT/ROOT] [--default-size SIZE] [--json]",
  description: [
    "Without --set: every Machine's Pool (kind, where, size, free) and the Volume copies in it.",
    "--set btrfs binds the Machine named by --machine to the btrfs filesystem mounted at <data>/pool;",
    "--loop-size SIZE first makes a loop file <data>/pool.img of that size for it (trials and tests).",
    "--set zfs:DATASET:/MOUNT/ROOT binds it to a ZFS dataset. A Machine without a Pool keeps Docker",
    "local volumes and refuses Provisioned Volumes (x-volumes).",
    "--default-size SIZE sets the size of a Provisioned Volume made there whose x-volumes names none",
    "(x-volumes: {NAME: {}}). A Machine whose daemon predates Pools, or the default size, is refused by name.",
  ],
  options: {
    ...sharedOptions("machine"),
    set: { type: "string" },
    "loop-size": { type: "string" },
    "default-size": { type: "string" },
    ...sharedOptions("json"),
  },
  async run({ values, io }): Promise<number> {
    const machine = stringFlag(values, "machine");
    const loopSize = stringFlag(values, "loop-size");
    const set = typeof values.set === "string" ? poolSet(values.set, loopSize) : undefined;
    if (set === undefined && loopSize !== undefined) {
      throw new UsageError(`--loop-size goes with --set btrfs`);
    }
    if (set !== undefined && machine === undefined) {
      throw new UsageError(`--set binds one Machine: name it with --machine`);
    }
    const defaultSize = typeof values["default-size"] === "string"
      ? sizeOption(values["default-size"])
      : undefined;
    if (defaultSize !== undefined && machine === undefined) {
      throw new UsageError(`--default-size sets one Machine's default: name it with --machine`);
    }
    const changes = set !== undefined || defaultSize !== undefined;
    using targets = await clusterTargets({ machine });
    const result = await askAll<MachinePoolResponse>(
      targets,
      (client, m, signal) => askPool(client, m.name, { set, defaultSize }, signal),
      changes ? 120_000 : undefined,
    );
    requireAnyAnswer(result, set === undefined ? "show the Pools" : "bind the Pool");
    if (values.json === true) {
      io.out(jsonLine({ machines: result.successes.map((s) => s.value), ...partialJson(result) }));
    } else {
      io.out(poolTable(result.successes.map((s) => ({ machine: s.machine.name, value: s.value }))));
      for (const line of partialLines(result)) io.err(line + "\n");
    }
    return result.failures.length > 0 && changes ? 1 : 0;
  },
};
