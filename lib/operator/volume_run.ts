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

import type { VolumeRunRecord } from "../store/mod.ts";
import { OperatorError } from "./errors.ts";
import { move } from "./volume_move.ts";
import {
  byName,
  checkSpace,
  describeWire,
  fence,
  type LiveCopy,
  type MoveFigures,
  only,
  readCopies,
  type RunContext,
  snapshotName,
  step,
  type VolumeRunHost,
} from "./volume_run_steps.ts";

export {
  describeWire,
  type LiveCopy,
  type MoveFigures,
  readCopies,
  type VolumeRunHost,
  type VolumeRunMachine,
} from "./volume_run_steps.ts";

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
  const r: RunContext = { host, volume, gen: run.gen, pause: host.busyPauseMs ?? 1_000, figures: {} };
  let error: { code: string; message: string } | undefined;
  try {
    const copies = before.copies.filter((c) => !(c as { noPool?: boolean }).noPool);
    // The fence: every Machine read takes this run's gen as its floor before any step.
    for (const c of copies) await fence(r, c);
    host.progress(`fenced ${copies.length} Machine(s) at gen ${run.gen}`);
    await sendSteps(r, request, copies, [...unlisted, ...before.unreachable]);
  } catch (caught) {
    if (r.died !== undefined) throw r.died;
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
    ...(request.kind === "move" ? { figures: r.figures } : {}),
  };
}

// The steps of the run `request` asks for, over the fenced `copies`; `silent` are the Machines that did not answer.
async function sendSteps(
  r: RunContext,
  request: VolumeRunRequest,
  copies: LiveCopy[],
  silent: { name: string; reason: string }[],
): Promise<void> {
  const { volume } = r;
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
        await step(r, target, { role: "mirror", snapshot: snapshotName(r.gen) }, {
          source: writer,
          sizeBytes: writer.sizeBytes,
        });
      } else {
        r.host.progress(
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
      const snapshot = snapshotName(r.gen);
      for (const m of mirrors) checkSpace(writer, m, volume);
      for (const m of mirrors) {
        await step(r, m, { role: "mirror", snapshot }, { source: writer, sizeBytes: writer.sizeBytes });
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
      await step(r, target, { role: "none" });
      break;
    }
    case "release": {
      await step(r, only(writers, "Writer", volume), { role: "none" });
      break;
    }
    case "move":
      await move(r, copies, byName(copies, request.to, volume), silent);
      break;
  }
}
