/**
 * A Move (docs/bets.md, "Volume handover") as a Volume Run's steps: mirror if needed, sync, cut, the final
 * incremental, Writer{start} on the target with the source Container's spec, then the source Container removed.
 * Between the cut and Writer{start} a failure undoes the cut; a re-run continues from what the copies show.
 *
 * @module
 */

import { OperatorError } from "./errors.ts";
import {
  checkpoint,
  checkSpace,
  type LiveCopy,
  readCopies,
  type RunContext,
  snapshotName,
  step,
} from "./volume_run_steps.ts";
import { messageOf } from "../util/mod.ts";

/**
 * Moves the Writer to `target`. The source Container's spec is read live from the source; the cut Snapshot is named
 * after the run, so a re-run finds the source (the Mirror at it) after the cut.
 */
export async function move(
  r: RunContext,
  copies: LiveCopy[],
  target: LiveCopy,
  silent: { name: string; reason: string }[],
): Promise<void> {
  const { volume } = r;
  let cut = `g${r.gen}-cut`;
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
      r.host.progress(`  ${target.machine.name} is the Writer already`);
      return;
    }
    // A re-run after Writer{start} was asked: the target's Container is started (found by its creation key, or
    // made if that request failed) and then the source's is removed.
    const spec = await sourceSpec(r, back, target);
    await step(r, target, { role: "writer" }, {
      sizeBytes: back.sizeBytes,
      ...(spec === undefined ? {} : { start: { spec } }),
    });
    await removeSourceContainers(r, back);
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
      await step(r, target, { role: "mirror", snapshot: snapshotName(r.gen) }, { source, sizeBytes: size });
    }
    await step(r, target, { role: "mirror", snapshot: snapshotName(r.gen) + "s" }, {
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
    await checkpoint(r, "before-cut");
    r.figures.cutAt = performance.now();
    await step(r, source, { role: "mirror", snapshot: cut });
    await checkpoint(r, "cut");
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
    r.host.progress(`  continuing after the cut: ${source.machine.name} is the source at ${cut}`);
  }
  // Between the cut and Writer{start}, any failure undoes: the source becomes the Writer at the cut again.
  let spec: Record<string, unknown> | undefined;
  try {
    if (!(target.copy.role === "mirror" && target.copy.snapshot === cut)) {
      await step(r, target, { role: "mirror", snapshot: cut }, { source, sizeBytes: source.sizeBytes });
    }
    spec = await sourceSpec(r, source, target);
  } catch (caught) {
    await undo(r, source, target, caught);
  }
  await checkpoint(r, "before-start");
  // The point of no return.
  await step(r, target, { role: "writer" }, {
    sizeBytes: source.sizeBytes,
    ...(spec === undefined ? {} : { start: { spec } }),
  });
  if (r.figures.cutAt !== undefined) {
    r.figures.unavailableMs = Math.round(performance.now() - r.figures.cutAt);
    r.host.progress(
      `  write-unavailable window (cut → target Writer started): ${r.figures.unavailableMs} ms`,
    );
  }
  await checkpoint(r, "started");
  await removeSourceContainers(r, source);
}

// The source Container's full spec, read live from the source; its x-machines now names the target, since the
// Volume's Writer decides where its Service runs (a Move is how it goes elsewhere).
async function sourceSpec(
  r: RunContext,
  source: LiveCopy,
  target: LiveCopy,
): Promise<Record<string, unknown> | undefined> {
  const { volume } = r;
  const held = await source.machine.client.volumeContainers({ volume }, {
    signal: AbortSignal.timeout(15_000),
  });
  const spec = held.containers[0]?.spec;
  if (spec === undefined) return undefined;
  const placement = spec.placement as { machines?: string[]; constraints?: string[] } | undefined;
  if (placement?.machines === undefined) return spec;
  return { ...spec, placement: { ...placement, machines: [target.machine.name] } };
}

async function undo(r: RunContext, source: LiveCopy, target: LiveCopy, caught: unknown): Promise<never> {
  const { volume } = r;
  const reason = messageOf(caught);
  r.host.progress(`  before the point of no return: ${reason}; undoing on ${source.machine.name}`);
  try {
    const held = await source.machine.client.volumeContainers({ volume }, {
      signal: AbortSignal.timeout(15_000),
    });
    const spec = held.containers[0]?.spec;
    await step(r, source, { role: "writer" }, {
      sizeBytes: source.sizeBytes,
      ...(spec === undefined ? {} : { start: { spec } }),
    });
  } catch (failed) {
    throw new OperatorError(
      "unavailable",
      `${reason}; the undo on "${source.machine.name}" failed too (${
        messageOf(failed)
      }). Stopped after the cut: the Volume has no Writer, its data is safe in the cut Snapshot ${
        source.copy.snapshot ?? ""
      } on "${source.machine.name}"; run "ployz volume move ${volume} --to ${target.machine.name}" again once "${source.machine.name}" answers`,
      { volume, stage: "after_cut", source: source.machine.name },
    );
  }
  throw new OperatorError("unavailable", `${reason}; undone: "${source.machine.name}" is the Writer again`);
}

async function removeSourceContainers(r: RunContext, source: LiveCopy): Promise<void> {
  const { volume } = r;
  const held = await source.machine.client.volumeContainers({ volume }, {
    signal: AbortSignal.timeout(15_000),
  });
  for (const c of held.containers) {
    await source.machine.client.removeContainer({ id: c.id }, { signal: AbortSignal.timeout(60_000) });
    r.host.progress(`  ${source.machine.name}: removed the source Container ${c.name}`);
  }
}
