// `ployz machine pool`: each Machine's Pool (the copy-on-write filesystem its Provisioned Volumes live in) and the
// Volume copies it holds, asked of every Machine (or `--machine M`); `--set` binds that one Machine to a Pool.
import { type Command, UsageError } from "../../lib/cli/mod.ts";
import { parseBytes } from "../../lib/deploy/mod.ts";
import type { MachinePoolResponse, PoolSetWire } from "../../lib/rpc/mod.ts";
import { askAll, clusterTargets, partialJson, partialLines, requireAnyAnswer } from "./cluster_targets.ts";
import { jsonLine } from "./connect.ts";
import { columns } from "./machine_target.ts";

function mib(bytes: number | undefined): string {
  return bytes === undefined ? "-" : `${(bytes / 2 ** 20).toFixed(1)}MiB`;
}

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

/** The human form of the answers. */
export function poolTable(answers: { machine: string; value: MachinePoolResponse }[]): string {
  const pools = columns(
    ["MACHINE", "POOL", "WHERE", "SIZE", "FREE", "PROBLEM"],
    answers.map(({ machine, value }) => [
      machine,
      value.pool?.kind ?? "none",
      value.pool?.where ?? "-",
      mib(value.pool?.total_bytes),
      mib(value.pool?.free_bytes),
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
  return pools + "\n" + columns(["VOLUME", "MACHINE", "COPY", "USED", "SIZE", "SNAPSHOTS"], copies);
}

/** `ployz machine pool`. */
export const machinePoolCommand: Command = {
  name: "pool",
  summary: "Show each Machine's Pool and Volume copies, or bind a Machine to a Pool",
  usage: "[--machine M] [--set btrfs [--loop-size SIZE] | --set zfs:DATASET:/MOUNT/ROOT] [--json]",
  description: [
    "Without --set: every Machine's Pool (kind, where, size, free) and the Volume copies in it.",
    "--set btrfs binds the Machine named by --machine to the btrfs filesystem mounted at <data>/pool;",
    "--loop-size SIZE first makes a loop file <data>/pool.img of that size for it (trials and tests).",
    "--set zfs:DATASET:/MOUNT/ROOT binds it to a ZFS dataset. A Machine without a Pool keeps Docker",
    "local volumes and refuses Provisioned Volumes (x-volumes).",
  ].join("\n"),
  options: {
    machine: { type: "string" },
    set: { type: "string" },
    "loop-size": { type: "string" },
    json: { type: "boolean" },
  },
  async run({ values, io }): Promise<number> {
    const machine = typeof values.machine === "string" ? values.machine : undefined;
    const loopSize = typeof values["loop-size"] === "string" ? values["loop-size"] : undefined;
    const set = typeof values.set === "string" ? poolSet(values.set, loopSize) : undefined;
    if (set === undefined && loopSize !== undefined) {
      throw new UsageError(`--loop-size goes with --set btrfs`);
    }
    if (set !== undefined && machine === undefined) {
      throw new UsageError(`--set binds one Machine: name it with --machine`);
    }
    using targets = await clusterTargets({ machine });
    const result = await askAll<MachinePoolResponse>(
      targets,
      (client, _m, signal) => client.machinePool(set === undefined ? {} : { set }, { signal }),
      set === undefined ? undefined : 120_000,
    );
    requireAnyAnswer(result, set === undefined ? "show the Pools" : "bind the Pool");
    if (values.json === true) {
      io.out(jsonLine({ machines: result.successes.map((s) => s.value), ...partialJson(result) }));
    } else {
      io.out(poolTable(result.successes.map((s) => ({ machine: s.machine.name, value: s.value }))));
      for (const line of partialLines(result)) io.err(line + "\n");
    }
    return result.failures.length > 0 && set !== undefined ? 1 : 0;
  },
};
