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

import {
  type CopyWire,
  isCopyWire,
  type MachineClient,
  type MachinePoolResponse,
  type SetVolumeCopyResponse,
} from "../rpc/mod.ts";
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
  /** A Writer's bytes written since its newest Snapshot: about what an incremental send from it carries. */
  changedBytes?: number;
  /** Bytes free in the Machine's Pool, as it reported them. */
  freeBytes?: number;
}

/** What a user asked. */
export type VolumeRunRequest =
  | { kind: "mirror"; to: string }
  | { kind: "sync" }
  | { kind: "release"; confirm: string }
  | { kind: "rm-mirror"; on: string }
  | { kind: "move"; to: string };

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
  /** A Move's figures. */
  figures?: MoveFigures;
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
  /**
   * Called at each named point of a Move (`before-cut`, `cut`, `before-start`, `started`); throwing stops the run
   * there with the run left open, as an operator killed at that point would.
   */
  checkpoint?(point: string): Promise<void> | void;
}

/** The figures of a Move. */
export interface MoveFigures {
  /** When the cut was asked (performance.now()). */
  cutAt?: number;
  /** From the cut's request to the target's Writer{start} answered: the write-unavailable window. */
  unavailableMs?: number;
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
      ...(held?.changed_bytes === undefined ? {} : { changedBytes: held.changed_bytes }),
      ...(shown.pool?.free_bytes === undefined ? {} : { freeBytes: shown.pool.free_bytes }),
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

/**
 * Refuses a send into a Pool with less free space than it needs, before it is asked: the report names both Machines
 * and both sizes, and `outcome` what that leaves (by default: nothing changed). A full send (the target holds
 * nothing) needs what the source's copy uses; an incremental one (the target holds a Mirror) about what the Writer
 * wrote since its newest Snapshot (btrfs: its qgroup's exclusive bytes, within a few KiB of the send stream's size;
 * ZFS: `written`). When the Mirror is older than that Snapshot the send carries more, so the estimate is a floor:
 * a Pool below it is refused for certain, one above it may still fill up, and that receive fails before any cut.
 */
export function checkSpace(
  source: LiveCopy,
  target: LiveCopy,
  volume: string,
  outcome = `nothing changed; "${source.machine.name}" still holds the Writer`,
): void {
  const free = target.freeBytes;
  if (free === undefined) return;
  const details = { volume, machine: target.machine.name, source: source.machine.name, "free_bytes": free };
  if (target.copy.role === "none") {
    if (source.usedBytes === undefined || free >= source.usedBytes) return;
    throw new OperatorError(
      "unavailable",
      `Machine "${target.machine.name}" has ${free} bytes free in its Pool and "${volume}" uses ${source.usedBytes} bytes on "${source.machine.name}": too little to receive it (${outcome})`,
      { ...details, "used_bytes": source.usedBytes },
    );
  }
  if (target.copy.role !== "mirror" || source.changedBytes === undefined || free >= source.changedBytes) {
    return;
  }
  throw new OperatorError(
    "unavailable",
    `Machine "${target.machine.name}" has ${free} bytes free in its Pool and "${volume}" has ${source.changedBytes} bytes written on "${source.machine.name}" since its newest Snapshot: too little to receive the incremental send (${outcome})`,
    { ...details, "changed_bytes": source.changedBytes },
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
    extra: { source?: LiveCopy; sizeBytes?: number; start?: { spec: Record<string, unknown> } } = {},
  ): Promise<SetVolumeCopyResponse> => {
    const request = {
      volume,
      expected: target.copy,
      wanted,
      gen: run.gen,
      ...(extra.source === undefined ? {} : { "source_machine_id": extra.source.machine.id }),
      ...(extra.sizeBytes === undefined ? {} : { "size_bytes": extra.sizeBytes }),
      ...(extra.start === undefined ? {} : { start: extra.start }),
    };
    const started = Date.now();
    for (let asked = 0;; asked++) {
      let answer: SetVolumeCopyResponse;
      let ours = true;
      try {
        answer = await target.machine.client.setVolumeCopy(request, { signal: AbortSignal.timeout(30_000) });
      } catch (caught) {
        // Another transition (a killed run's task) still runs there: wait for it like for our own.
        if ((caught as { code?: string }).code !== "busy" || Date.now() - started > 30 * 60_000) throw caught;
        answer = { "machine_id": target.machine.id, volume, outcome: "busy", copy: target.copy, floor: 0 };
        ours = false;
      }
      if (answer.outcome !== "busy") {
        target.copy = answer.copy;
        return answer;
      }
      if (asked % 10 === 0) {
        host.progress(
          `  ${target.machine.name}: still working (${Math.round((Date.now() - started) / 1000)} s)`,
        );
      }
      // A Machine answers `busy` to this request only after waiting on its task for a while: asked again at once,
      // a long receive is seen done when it ends, not up to a pause later. Another transition is refused at once.
      await sleep(ours ? Math.min(pause, 50) : pause);
    }
  };
  const step = async (
    target: LiveCopy,
    wanted: CopyWire,
    extra: { source?: LiveCopy; sizeBytes?: number; start?: { spec: Record<string, unknown> } } = {},
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

  // The fence asks each Machine for the copy it holds, which raises its floor to this run's gen. A transition an
  // earlier run started there (a killed run's receive) is waited on (`busy`); when it ended, the copy is what it left,
  // not what this run read before: the Machine refuses the stale expected copy and reports the real one, and the
  // fence is asked again at that. Once fenced, no older run's request changes the copy.
  const fence = async (c: LiveCopy): Promise<void> => {
    for (let tries = 0;; tries++) {
      try {
        await ask(c, c.copy);
        return;
      } catch (caught) {
        const refused = caught as { code?: string; details?: { reason?: unknown; copy?: unknown } };
        const now = refused.details?.copy;
        if (
          tries >= 3 || refused.code !== "conflict" || refused.details?.reason !== "stale_expected" ||
          !isCopyWire(now)
        ) {
          throw caught;
        }
        host.progress(
          `  ${c.machine.name}: ${describeWire(c.copy)} → ${
            describeWire(now as CopyWire)
          } by an earlier run's transition; fencing at that`,
        );
        c.copy = now as CopyWire;
      }
    }
  };

  // A checkpoint that throws stops the run where it is, as if its operator died: the run stays open.
  let died: unknown;
  const checkpoint = async (point: string): Promise<void> => {
    try {
      await host.checkpoint?.(point);
    } catch (stop) {
      died = stop;
      throw stop;
    }
  };
  let error: { code: string; message: string } | undefined;
  const figures: MoveFigures = {};
  try {
    const copies = before.copies.filter((c) => !(c as { noPool?: boolean }).noPool);
    // The fence: every Machine read takes this run's gen as its floor before any step.
    for (const c of copies) await fence(c);
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
          checkSpace(writer, target, volume);
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
        for (const m of mirrors) checkSpace(writer, m, volume);
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
      case "move":
        await move(copies, byName(copies, request.to, volume), [...unlisted, ...before.unreachable]);
        break;
    }
  } catch (caught) {
    if (died !== undefined) throw died;
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
    ...(request.kind === "move" ? { figures } : {}),
  };

  // Move (docs/bets.md, "Volume handover"): mirror if needed, sync, cut, final incremental, Writer{start} on the
  // target with the source Container's spec read live from the source, then remove the source Container. The cut
  // Snapshot is named after the run, so a re-run finds the source (the Mirror at it) after the cut.
  async function move(
    copies: LiveCopy[],
    target: LiveCopy,
    silent: { name: string; reason: string }[],
  ): Promise<void> {
    let cut = `g${run.gen}-cut`;
    const writers = copies.filter((c) => c.copy.role === "writer");
    // The source of a Move cut by this run or an earlier one: the other Machine at the newest cut Snapshot.
    const cutSource = (): LiveCopy | undefined => {
      const gen = (c: LiveCopy): number => Number(/^g(\d+)-cut$/.exec(c.copy.snapshot ?? "")?.[1] ?? -1);
      return copies.filter((c) => c !== target && c.copy.role === "mirror" && gen(c) >= 0)
        .sort((a, b) => gen(b) - gen(a))[0];
    };
    let source: LiveCopy;
    if (writers.length === 1 && writers[0] === target) {
      const back = cutSource();
      if (back === undefined) {
        host.progress(`  ${target.machine.name} is the Writer already`);
        return;
      }
      // A re-run after Writer{start} was asked: the target's Container is started (found by its creation key, or
      // made if that request failed) and then the source's is removed.
      const spec = await sourceSpec(back, target);
      await step(target, { role: "writer" }, {
        sizeBytes: back.sizeBytes,
        ...(spec === undefined ? {} : { start: { spec } }),
      });
      await removeSourceContainers(back);
      return;
    }
    if (writers.length > 1) {
      throw new OperatorError("conflict", `Volume "${volume}" has ${writers.length} Writers`);
    }
    if (writers.length === 1) {
      source = writers[0];
      const size = source.sizeBytes;
      checkSpace(source, target, volume);
      if (target.copy.role === "none") {
        await step(target, { role: "mirror", snapshot: snapshotName(run.gen) }, { source, sizeBytes: size });
      }
      await step(target, { role: "mirror", snapshot: snapshotName(run.gen) + "s" }, {
        source,
        sizeBytes: size,
      });
      // The final incremental carries what was written since that sync: its estimate, against the target's space
      // now, before the cut.
      const now = await readCopies([source.machine, target.machine], volume);
      const [s, t] = [source, target].map((c) => now.copies.find((n) => n.machine.id === c.machine.id));
      if (s !== undefined && t !== undefined) {
        checkSpace(
          s,
          t,
          volume,
          `the cut was not made; "${source.machine.name}" still holds the Writer and "${target.machine.name}" a Mirror`,
        );
      }
      await checkpoint("before-cut");
      figures.cutAt = performance.now();
      await step(source, { role: "mirror", snapshot: cut });
      await checkpoint("cut");
    } else {
      const at = cutSource();
      if (at === undefined && silent.length > 0) {
        // The source of a cut Move may be the Machine that does not answer: its cut Snapshot holds the data.
        throw new OperatorError(
          "unavailable",
          `Volume "${volume}" has no Writer among the Machines that answered, and none of them holds a Move's cut Snapshot; ${
            silent.map((u) => `"${u.name}" did not answer (${u.reason})`).join(", ")
          }. If a Move was cut there, its data is safe in that Machine's cut Snapshot and "${target.machine.name}" stays a Mirror: run "ployz volume move ${volume} --to ${target.machine.name}" again once it answers`,
          { volume, unreachable: silent.map((u) => u.name) },
        );
      }
      if (at === undefined) {
        throw new OperatorError(
          "not_found",
          `Volume "${volume}" has no Writer and no other Machine holds a Move's cut Snapshot: nothing to move`,
        );
      }
      source = at;
      cut = at.copy.snapshot!;
      host.progress(`  continuing after the cut: ${source.machine.name} is the source at ${cut}`);
    }
    // Between the cut and Writer{start}, any failure undoes: the source becomes the Writer at the cut again.
    let spec: Record<string, unknown> | undefined;
    try {
      if (!(target.copy.role === "mirror" && target.copy.snapshot === cut)) {
        await step(target, { role: "mirror", snapshot: cut }, { source, sizeBytes: source.sizeBytes });
      }
      spec = await sourceSpec(source, target);
    } catch (caught) {
      await undo(source, target, caught);
    }
    await checkpoint("before-start");
    // The point of no return.
    await step(target, { role: "writer" }, {
      sizeBytes: source.sizeBytes,
      ...(spec === undefined ? {} : { start: { spec } }),
    });
    if (figures.cutAt !== undefined) {
      figures.unavailableMs = Math.round(performance.now() - figures.cutAt);
      host.progress(`  write-unavailable window (cut → target Writer started): ${figures.unavailableMs} ms`);
    }
    await checkpoint("started");
    await removeSourceContainers(source);
  }

  // The source Container's full spec, read live from the source; its x-machines now names the target, since the
  // Volume's Writer decides where its Service runs (a Move is how it goes elsewhere).
  async function sourceSpec(
    source: LiveCopy,
    target: LiveCopy,
  ): Promise<Record<string, unknown> | undefined> {
    const held = await source.machine.client.volumeContainers({ volume }, {
      signal: AbortSignal.timeout(15_000),
    });
    const spec = held.containers[0]?.spec;
    if (spec === undefined) return undefined;
    const placement = spec.placement as { machines?: string[]; constraints?: string[] } | undefined;
    if (placement?.machines === undefined) return spec;
    return { ...spec, placement: { ...placement, machines: [target.machine.name] } };
  }

  async function undo(source: LiveCopy, target: LiveCopy, caught: unknown): Promise<never> {
    const reason = caught instanceof Error ? caught.message : String(caught);
    host.progress(`  before the point of no return: ${reason}; undoing on ${source.machine.name}`);
    try {
      const held = await source.machine.client.volumeContainers({ volume }, {
        signal: AbortSignal.timeout(15_000),
      });
      const spec = held.containers[0]?.spec;
      await step(source, { role: "writer" }, {
        sizeBytes: source.sizeBytes,
        ...(spec === undefined ? {} : { start: { spec } }),
      });
    } catch (failed) {
      throw new OperatorError(
        "unavailable",
        `${reason}; the undo on "${source.machine.name}" failed too (${
          failed instanceof Error ? failed.message : String(failed)
        }). Stopped after the cut: the Volume has no Writer, its data is safe in the cut Snapshot ${
          source.copy.snapshot ?? ""
        } on "${source.machine.name}"; run "ployz volume move ${volume} --to ${target.machine.name}" again once "${source.machine.name}" answers`,
        { volume, stage: "after_cut", source: source.machine.name },
      );
    }
    throw new OperatorError("unavailable", `${reason}; undone: "${source.machine.name}" is the Writer again`);
  }

  async function removeSourceContainers(source: LiveCopy): Promise<void> {
    const held = await source.machine.client.volumeContainers({ volume }, {
      signal: AbortSignal.timeout(15_000),
    });
    for (const c of held.containers) {
      await source.machine.client.removeContainer({ id: c.id }, { signal: AbortSignal.timeout(60_000) });
      host.progress(`  ${source.machine.name}: removed the source Container ${c.name}`);
    }
  }
}
