/**
 * Volume Runs, driven by the operator (docs/bets.md, bet 6): Mirror, Sync, Release and Delete Mirror as a fixed list
 * of SetVolumeCopy requests. The Config Store holds the open run per Volume and its gen, the only lock; each run
 * reads every copy live, fences every Machine it reads at its gen (a request already at the want, which raises the
 * Machine's floor so a late request of an older run is refused there), then sends its steps one at a time, each
 * after the previous answered. A request answered `busy` is asked again, the same, until its task ends. Volume data
 * never passes through here: a receive pulls from the source Machine over the mesh. A run ends done or failed with
 * the copies it saw as evidence; one whose operator died stays open and its re-run continues from what the disks
 * show.
 *
 * @module
 */

import type { CopyWire, MachineClient, MachinePoolResponse, SetVolumeCopyResponse } from "../rpc/mod.ts";
import type { ConfigStore, VolumeRunRecord } from "../store/mod.ts";
import { sleep } from "../util/mod.ts";
import { OperatorError } from "./errors.ts";

/** A Machine a run may ask. */
export interface VolumeRunMachine {
  /** Machine id. */
  id: string;
  /** Machine Name. */
  name: string;
  /** Its client. */
  client: MachineClient;
}

/** One Machine's copy of the Volume, read live. */
export interface LiveCopy {
  /** The Machine. */
  machine: VolumeRunMachine;
  /** Its copy (`none` when its Pool holds nothing of the Volume). */
  copy: CopyWire;
  /** The copy's size limit. */
  sizeBytes?: number;
  /** Bytes used. */
  usedBytes?: number;
}

/** What a user asked. */
export type VolumeRunRequest =
  | { kind: "mirror"; to: string }
  | { kind: "sync" }
  | { kind: "release"; confirm: string }
  | { kind: "rm-mirror"; on: string };

/** How a run ended. */
export interface VolumeRunResult {
  /** The run as recorded at the end. */
  run: VolumeRunRecord;
  /** Whether it resumed an open run. */
  resumed: boolean;
  /** `done` or `failed`. */
  state: "done" | "failed";
  /** The copies after the run, per Machine that answered. */
  copies: LiveCopy[];
  /** Machines that did not answer, with why. */
  unreachable: { name: string; reason: string }[];
  /** Why it failed. */
  error?: { code: string; message: string };
}

/** What a run needs from its caller. */
export interface VolumeRunHost {
  /** The Cluster's Machines, each with a client, and those that cannot be asked. */
  machines(): Promise<{ machines: VolumeRunMachine[]; unreachable: { name: string; reason: string }[] }>;
  /** The operator's Config Store. */
  store: ConfigStore;
  /** One line per step. */
  progress(line: string): void;
  /** Now (ISO 8601). */
  now?(): string;
  /** Pause between asks of a busy step; default 1 s. */
  busyPauseMs?: number;
}

/** The copy in words. */
export function describeWire(copy: CopyWire): string {
  return copy.role === "none"
    ? "none"
    : copy.role === "mirror"
    ? `Mirror@${copy.snapshot}`
    : `Writer(epoch ${copy.epoch ?? 0})`;
}

/** Every Machine's copy of `volume`, read live; Machines without a Pool hold none. */
export async function readCopies(
  machines: readonly VolumeRunMachine[],
  volume: string,
): Promise<{ copies: LiveCopy[]; unreachable: { name: string; reason: string }[] }> {
  const copies: LiveCopy[] = [];
  const unreachable: { name: string; reason: string }[] = [];
  await Promise.all(machines.map(async (machine) => {
    let shown: MachinePoolResponse;
    try {
      shown = await machine.client.machinePool({}, { signal: AbortSignal.timeout(15_000) });
    } catch (error) {
      unreachable.push({
        name: machine.name,
        reason: error instanceof Error ? error.message : String(error),
      });
      return;
    }
    const held = shown.volumes.find((v) => v.name === volume);
    const copy: CopyWire = held === undefined
      ? { role: "none" }
      : held.role === "writer"
      ? { role: "writer", epoch: held.epoch ?? 0 }
      : { role: "mirror", snapshot: held.snapshot ?? "" };
    copies.push({
      machine,
      copy,
      ...(shown.pool === null ? { noPool: true } : {}),
      sizeBytes: held?.size_bytes,
      usedBytes: held?.used_bytes,
    } as LiveCopy);
  }));
  copies.sort((a, b) => a.machine.name.localeCompare(b.machine.name));
  return { copies, unreachable };
}

function snapshotName(gen: number): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, "").replace(/\..*$/, "").toLowerCase();
  return `g${gen}-${stamp}`;
}

function only<T>(list: T[], what: string, volume: string): T {
  if (list.length === 1) return list[0];
  throw new OperatorError(
    list.length === 0 ? "not_found" : "conflict",
    list.length === 0
      ? `Volume "${volume}" has no ${what}`
      : `Volume "${volume}" has ${list.length} ${what}s`,
  );
}

function byName(copies: LiveCopy[], name: string, volume: string): LiveCopy {
  const found = copies.find((c) => c.machine.name === name || c.machine.id === name);
  if (found === undefined) {
    throw new OperatorError(
      "not_found",
      `Machine "${name}" did not answer with its copy of "${volume}" (unknown, or unreachable)`,
    );
  }
  return found;
}

/** Runs (or resumes) one Volume Run; returns how it ended. Throws only before the run opened. */
export async function runVolume(
  host: VolumeRunHost,
  volume: string,
  request: VolumeRunRequest,
): Promise<VolumeRunResult> {
  const now = host.now ?? (() => new Date().toISOString());
  const { kind, ...args } = request;
  const { machines, unreachable: unlisted } = await host.machines();
  const before = await readCopies(machines, volume);
  if (before.copies.every((c) => c.copy.role === "none")) {
    throw new OperatorError("not_found", `No Machine that answered holds Volume "${volume}"`, { volume });
  }
  if (request.kind === "release" && request.confirm !== volume) {
    throw new OperatorError(
      "invalid_argument",
      `Releasing "${volume}" destroys its Writer's data: confirm with --confirm ${volume} (the exact name)`,
      { volume },
    );
  }
  const { run, resumed } = host.store.openVolumeRun(volume, kind, JSON.stringify(args), now());
  host.progress(
    `${resumed ? "resuming" : "opened"} ${kind} run of "${volume}" (gen ${run.gen}); copies: ${
      before.copies.map((c) => `${c.machine.name} ${describeWire(c.copy)}`).join(", ")
    }`,
  );
  const pause = host.busyPauseMs ?? 1_000;
  const ask = async (
    target: LiveCopy,
    wanted: CopyWire,
    extra: { source?: LiveCopy; sizeBytes?: number } = {},
  ): Promise<SetVolumeCopyResponse> => {
    const request = {
      volume,
      expected: target.copy,
      wanted,
      gen: run.gen,
      ...(extra.source === undefined ? {} : { "source_machine_id": extra.source.machine.id }),
      ...(extra.sizeBytes === undefined ? {} : { "size_bytes": extra.sizeBytes }),
    };
    const started = Date.now();
    for (let asked = 0;; asked++) {
      const answer = await target.machine.client.setVolumeCopy(request, {
        signal: AbortSignal.timeout(30_000),
      });
      if (answer.outcome !== "busy") {
        target.copy = answer.copy;
        return answer;
      }
      if (asked % 10 === 0) {
        host.progress(
          `  ${target.machine.name}: still working (${Math.round((Date.now() - started) / 1000)} s)`,
        );
      }
      await sleep(pause);
    }
  };
  const step = async (
    target: LiveCopy,
    wanted: CopyWire,
    extra: { source?: LiveCopy; sizeBytes?: number } = {},
  ): Promise<void> => {
    const from = describeWire(target.copy);
    const started = performance.now();
    const answer = await ask(target, wanted, extra);
    host.progress(
      `  ${target.machine.name}: ${from} → ${describeWire(answer.copy)}${
        extra.source === undefined ? "" : ` (from ${extra.source.machine.name})`
      } ${
        answer.outcome === "at_want" ? "already there" : `in ${Math.round(performance.now() - started)} ms`
      }`,
    );
  };

  let error: { code: string; message: string } | undefined;
  try {
    const copies = before.copies.filter((c) => !(c as { noPool?: boolean }).noPool);
    // The fence: every Machine read takes this run's gen as its floor before any step.
    for (const c of copies) await ask(c, c.copy);
    host.progress(`fenced ${copies.length} Machine(s) at gen ${run.gen}`);
    const writers = copies.filter((c) => c.copy.role === "writer");
    switch (request.kind) {
      case "mirror": {
        const writer = only(writers, "Writer", volume);
        const target = byName(copies, request.to, volume);
        if (target === writer) {
          throw new OperatorError(
            "invalid_argument",
            `Machine "${target.machine.name}" is the Writer of "${volume}"`,
          );
        }
        if (target.copy.role === "none") {
          await step(target, { role: "mirror", snapshot: snapshotName(run.gen) }, {
            source: writer,
            sizeBytes: writer.sizeBytes,
          });
        } else {
          host.progress(
            `  ${target.machine.name}: already ${describeWire(target.copy)} (sync brings it up to date)`,
          );
        }
        break;
      }
      case "sync": {
        const writer = only(writers, "Writer", volume);
        const mirrors = copies.filter((c) => c.copy.role === "mirror");
        if (mirrors.length === 0) {
          throw new OperatorError("not_found", `Volume "${volume}" has no Mirror to sync`);
        }
        const snapshot = snapshotName(run.gen);
        for (const m of mirrors) {
          await step(m, { role: "mirror", snapshot }, { source: writer, sizeBytes: writer.sizeBytes });
        }
        break;
      }
      case "rm-mirror": {
        const target = byName(copies, request.on, volume);
        if (target.copy.role === "writer") {
          throw new OperatorError(
            "invalid_argument",
            `Machine "${target.machine.name}" holds the Writer of "${volume}", not a Mirror: "volume release" drops a Writer`,
          );
        }
        await step(target, { role: "none" });
        break;
      }
      case "release": {
        await step(only(writers, "Writer", volume), { role: "none" });
        break;
      }
    }
  } catch (caught) {
    const coded = caught as { code?: string; message?: string };
    error = {
      code: typeof coded.code === "string" ? coded.code : "internal",
      message: String(coded.message ?? caught),
    };
    host.progress(`failed: ${error.code}: ${error.message}`);
  }
  const after = await readCopies(machines, volume);
  const evidence = after.copies.map((c) => `${c.machine.name} ${describeWire(c.copy)}`).join(", ");
  const state = error === undefined ? "done" : "failed";
  host.store.closeVolumeRun(
    volume,
    run.gen,
    state,
    error === undefined ? evidence : `${error.code}: ${error.message}; copies: ${evidence}`,
    now(),
  );
  return {
    run: host.store.volumeRun(volume) ?? run,
    resumed,
    state,
    copies: after.copies,
    unreachable: [...unlisted, ...after.unreachable],
    ...(error === undefined ? {} : { error }),
  };
}
