/**
 * What every Volume Run is made of: the copies read live, the space a send needs, and its requests — one
 * SetVolumeCopy asked until its task ends (`ask`), reported as a step, the fence at the run's gen, and the named
 * checkpoints a Move stops at.
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
import type { ConfigStore } from "../store/mod.ts";
import { messageOf, sleep } from "../util/mod.ts";
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
        reason: messageOf(error),
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

export function snapshotName(gen: number): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, "").replace(/\..*$/, "").toLowerCase();
  return `g${gen}-${stamp}`;
}

export function only<T>(list: T[], what: string, volume: string): T {
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

export function byName(copies: LiveCopy[], name: string, volume: string): LiveCopy {
  const found = copies.find((c) => c.machine.name === name || c.machine.id === name);
  if (found === undefined) {
    throw new OperatorError(
      "not_found",
      `Machine "${name}" did not answer with its copy of "${volume}" (unknown, or unreachable)`,
    );
  }
  return found;
}

/** One open run: what its requests carry and what it records on the way. */
export interface RunContext {
  host: VolumeRunHost;
  volume: string;
  /** The run's gen: every request carries it, and the fence raises each Machine's floor to it. */
  gen: number;
  /** Pause between asks of a busy step. */
  pause: number;
  /** A Move's figures. */
  figures: MoveFigures;
  /** What a checkpoint threw: the run stops there and stays open. */
  died?: unknown;
}

/** What a step may add to its request: the Machine to receive from, the Volume's size, the Container to start. */
export interface StepExtra {
  source?: LiveCopy;
  sizeBytes?: number;
  start?: { spec: Record<string, unknown> };
}

/** Asks `target` for `wanted` until it answers other than `busy`; `target.copy` becomes what it answered. */
export async function ask(
  r: RunContext,
  target: LiveCopy,
  wanted: CopyWire,
  extra: StepExtra = {},
): Promise<SetVolumeCopyResponse> {
  const { host, volume, pause } = r;
  const request = {
    volume,
    expected: target.copy,
    wanted,
    gen: r.gen,
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
}

/** {@link ask}, reported as one progress line: from what, to what, and how long it took. */
export async function step(
  r: RunContext,
  target: LiveCopy,
  wanted: CopyWire,
  extra: StepExtra = {},
): Promise<void> {
  const from = describeWire(target.copy);
  const started = performance.now();
  const answer = await ask(r, target, wanted, extra);
  r.host.progress(
    `  ${target.machine.name}: ${from} → ${describeWire(answer.copy)}${
      extra.source === undefined ? "" : ` (from ${extra.source.machine.name})`
    } ${answer.outcome === "at_want" ? "already there" : `in ${Math.round(performance.now() - started)} ms`}`,
  );
}

/**
 * The fence asks each Machine for the copy it holds, which raises its floor to this run's gen. A transition an
 * earlier run started there (a killed run's receive) is waited on (`busy`); when it ended, the copy is what it left,
 * not what this run read before: the Machine refuses the stale expected copy and reports the real one, and the
 * fence is asked again at that. Once fenced, no older run's request changes the copy.
 */
export async function fence(r: RunContext, c: LiveCopy): Promise<void> {
  for (let tries = 0;; tries++) {
    try {
      await ask(r, c, c.copy);
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
      r.host.progress(
        `  ${c.machine.name}: ${describeWire(c.copy)} → ${
          describeWire(now as CopyWire)
        } by an earlier run's transition; fencing at that`,
      );
      c.copy = now as CopyWire;
    }
  }
}

/** Calls the host's checkpoint `point`; what it throws stops the run where it is, as if its operator died. */
export async function checkpoint(r: RunContext, point: string): Promise<void> {
  try {
    await r.host.checkpoint?.(point);
  } catch (stop) {
    r.died = stop;
    throw stop;
  }
}
