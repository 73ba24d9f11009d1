// `ployz volume`: Volume Runs (mirror, sync, release, rm-mirror) driven from here, one open run per Volume kept in
// the Config Store, and `ls` / `inspect` of every Machine's copy (a Partial Result).
import { CliError, type Command, type Io, UsageError } from "../../lib/cli/mod.ts";
import {
  describeWire,
  readCopies,
  runVolume,
  type VolumeRunMachine,
  type VolumeRunRequest,
  type VolumeRunResult,
} from "../../lib/operator/mod.ts";
import { clusterTargets } from "./cluster_targets.ts";
import { cliError, jsonLine, openConfig } from "./connect.ts";
import { table } from "./table.ts";
import { mib } from "./units.ts";
import { messageOf } from "../../lib/util/mod.ts";
import { sharedOptions } from "./flags.ts";

/** A Volume as the user names it: its Pool name (`shop_db`) or `PROJECT/VOLUME`. */
export function volumeArg(value: string | undefined): string {
  if (value === undefined) {
    throw new UsageError("Name the Volume: its name (as `ployz volume ls` shows) or PROJECT/VOLUME");
  }
  const name = value.includes("/") ? value.replace("/", "_") : value;
  if (!/^[a-z0-9][a-z0-9_.-]{0,127}$/.test(name) || name.includes("..")) {
    throw new UsageError(
      `Invalid Volume "${value.slice(0, 140)}": use its name as "ployz volume ls" shows it`,
    );
  }
  return name;
}

// The Config Store, closed when the command's scope ends.
async function withMachines<T>(
  fn: (machines: VolumeRunMachine[], unreachable: { name: string; reason: string }[]) => Promise<T>,
): Promise<T> {
  using targets = await clusterTargets();
  const machines: VolumeRunMachine[] = [];
  const unreachable: { name: string; reason: string }[] = [];
  for (const t of targets.targets) {
    if ("client" in t) machines.push({ id: t.id, name: t.name, client: t.client });
    else unreachable.push({ name: t.name, reason: t.omitted });
  }
  return await fn(machines, unreachable);
}

function report(io: Io, result: VolumeRunResult, json: boolean): number {
  if (json) {
    io.out(jsonLine({
      volume: result.run.volume,
      gen: result.run.gen,
      kind: result.run.kind,
      state: result.state,
      resumed: result.resumed,
      copies: result.copies.map((c) => ({ "machine_name": c.machine.name, copy: c.copy })),
      unreachable: result.unreachable,
      ...(result.figures?.unavailableMs === undefined
        ? {}
        : { "unavailable_ms": result.figures.unavailableMs }),
      ...(result.error === undefined ? {} : { error: result.error }),
    }));
  }
  const copies = result.copies.map((c) => `${c.machine.name} ${describeWire(c.copy)}`).join(", ");
  io.err(
    `${result.run.kind} run of "${result.run.volume}" (gen ${result.run.gen}) ${result.state}; copies: ${copies}\n`,
  );
  for (const u of result.unreachable) io.err(`Machine "${u.name}" did not answer: ${u.reason}\n`);
  if (result.error !== undefined) {
    throw new CliError(result.error.code as never, `Volume run failed: ${result.error.message}`);
  }
  return 0;
}

function runCommand(
  name: string,
  summary: string,
  usage: string,
  options: Command["options"],
  request: (values: Record<string, unknown>) => VolumeRunRequest,
): Command {
  return {
    name,
    summary,
    usage,
    positionals: [1, 1],
    options: { ...options, ...sharedOptions("json") },
    async run({ values, positionals, io }): Promise<number> {
      const volume = volumeArg(positionals[0]);
      const asked = request(values);
      using config = openConfig();
      const result = await withMachines((machines, unreachable) =>
        runVolume(
          {
            machines: () => Promise.resolve({ machines, unreachable }),
            store: config,
            progress: (line) => io.err(`${line}\n`),
          },
          volume,
          asked,
        ).catch((error) => {
          throw cliError(error);
        })
      );
      return report(io, result, values.json === true);
    },
  };
}

function required(values: Record<string, unknown>, option: string): string {
  const value = values[option];
  if (typeof value !== "string" || value === "") throw new UsageError(`Option "--${option}" is required`);
  return value;
}

const ls: Command = {
  name: "ls",
  summary: "Every Machine's Volume copies (Writer, Mirror) with usage and the open run",
  usage: "[--json]",
  options: sharedOptions("json"),
  async run({ values, io }): Promise<number> {
    using config = openConfig();
    return await withMachines(async (machines, unreachable) => {
      const answers = await Promise.all(machines.map(async (m) => {
        try {
          return {
            machine: m,
            shown: await m.client.machinePool({}, { signal: AbortSignal.timeout(15_000) }),
          };
        } catch (error) {
          unreachable.push({ name: m.name, reason: messageOf(error) });
          return undefined;
        }
      }));
      const rows = answers.flatMap((a) =>
        a === undefined ? [] : a.shown.volumes.map((v) => ({ machine: a.machine.name, ...v }))
      ).sort((a, b) => `${a.name} ${a.machine}`.localeCompare(`${b.name} ${b.machine}`));
      if (values.json === true) {
        io.out(jsonLine({ volumes: rows, unreachable }));
      } else {
        io.out(table(
          ["VOLUME", "MACHINE", "COPY", "USED", "SIZE", "SNAPSHOTS", "RUN"],
          rows.map((v) => {
            const run = config.volumeRun(v.name);
            return [
              v.name,
              v.machine,
              v.role === "writer" ? `Writer(epoch ${v.epoch ?? 0})` : `Mirror@${v.snapshot ?? "?"}`,
              mib(v.used_bytes),
              mib(v.size_bytes),
              v.snapshots.slice(-2).join(",") || "-",
              run === undefined ? "-" : `${run.kind} gen ${run.gen} ${run.state}`,
            ];
          }),
        ));
        for (const u of unreachable) io.err(`Machine "${u.name}" did not answer: ${u.reason}\n`);
      }
      return 0;
    });
  },
};

const inspect: Command = {
  name: "inspect",
  summary: "One Volume: each Machine's copy, read live, and its newest run",
  usage: "VOLUME [--json]",
  positionals: [1, 1],
  options: sharedOptions("json"),
  async run({ values, positionals, io }): Promise<number> {
    const volume = volumeArg(positionals[0]);
    using config = openConfig();
    return await withMachines(async (machines, unlisted) => {
      const { copies, unreachable } = await readCopies(machines, volume);
      const run = config.volumeRun(volume);
      const held = copies.filter((c) => c.copy.role !== "none");
      if (held.length === 0 && run === undefined) {
        throw new CliError("not_found", `No Machine that answered holds Volume "${volume}"`);
      }
      const all = [...unlisted, ...unreachable];
      if (values.json === true) {
        io.out(jsonLine({
          volume,
          copies: copies.map((c) => ({
            "machine_name": c.machine.name,
            "machine_id": c.machine.id,
            copy: c.copy,
            "size_bytes": c.sizeBytes,
            "used_bytes": c.usedBytes,
          })),
          run: run ?? null,
          unreachable: all,
        }));
      } else {
        io.out(table(
          ["MACHINE", "COPY", "USED", "SIZE"],
          copies.map((c) => [c.machine.name, describeWire(c.copy), mib(c.usedBytes), mib(c.sizeBytes)]),
        ));
        if (run !== undefined) {
          io.out(`run: ${run.kind} gen ${run.gen} ${run.state} (started ${run.startedAt}) ${run.evidence}\n`);
        }
        for (const u of all) io.err(`Machine "${u.name}" did not answer: ${u.reason}\n`);
      }
      return 0;
    });
  },
};

const cancel: Command = {
  name: "cancel",
  summary: "Close VOLUME's open run as cancelled (the operator's lock only; no Machine's copy changes)",
  usage: "VOLUME",
  positionals: [1, 1],
  run({ positionals, io }): Promise<number> {
    const volume = volumeArg(positionals[0]);
    using config = openConfig();
    const run = config.volumeRun(volume);
    if (run?.state !== "open") {
      throw new CliError("not_found", `Volume "${volume}" has no open run`);
    }
    config.closeVolumeRun(
      volume,
      run.gen,
      "cancelled",
      "cancelled by the operator",
      new Date().toISOString(),
    );
    io.err(
      `${run.kind} run of "${volume}" (gen ${run.gen}) cancelled; copies stay as they are (ployz volume inspect)\n`,
    );
    return Promise.resolve(0);
  },
};

/** `ployz volume`. */
export const volumeCommand: Command = {
  name: "volume",
  summary: "Provisioned Volumes: list, inspect, and Volume Runs (mirror, sync, move, release, rm-mirror)",
  subcommands: [
    ls,
    inspect,
    cancel,
    runCommand(
      "mirror",
      "Make a Mirror of VOLUME on Machine M, received from its Writer over the mesh",
      "VOLUME --to M [--json]",
      { to: { type: "string" } },
      (values) => ({ kind: "mirror", to: required(values, "to") }),
    ),
    runCommand(
      "move",
      "Move VOLUME's Writer (and its Container) to Machine M: mirror, sync, cut, final sync, start there",
      "VOLUME --to M [--json]",
      { to: { type: "string" } },
      (values) => ({ kind: "move", to: required(values, "to") }),
    ),
    runCommand(
      "sync",
      "Bring every Mirror of VOLUME up to a new Snapshot of its Writer (incremental)",
      "VOLUME [--json]",
      {},
      () => ({ kind: "sync" }),
    ),
    runCommand(
      "rm-mirror",
      "Delete the Mirror of VOLUME on Machine M",
      "VOLUME --on M [--json]",
      { on: { type: "string" } },
      (values) => ({ kind: "rm-mirror", on: required(values, "on") }),
    ),
    runCommand(
      "release",
      "Destroy VOLUME's Writer copy (Data Loss): needs --confirm with the exact name",
      "VOLUME --confirm VOLUME [--json]",
      { confirm: { type: "string" } },
      (values) => ({ kind: "release", confirm: typeof values.confirm === "string" ? values.confirm : "" }),
    ),
  ],
};
