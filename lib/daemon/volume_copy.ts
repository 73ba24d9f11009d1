/**
 * SetVolumeCopy on this Machine (`ployz.volume.set_copy.v1`): each request is decided in turn against this Machine's
 * copy of the Volume and its floor (lib/volume's pure transition table); a step runs as a task the request waits on
 * for at most {@link COPY_ANSWER_MS}, answering `busy` after that, and the caller asks again with the same request.
 *
 * @module
 */

import type { ContainerSpec } from "../deploy/machine/mod.ts";
import { RpcError, type SetVolumeCopyRequest, type SetVolumeCopyResponse } from "../rpc/mod.ts";
import { checkVolumeName, copyAfter, decideCopy, floorAfter, VolumeError } from "../volume/mod.ts";
import {
  type CopyTask,
  currentCopy,
  publish,
  readLedger,
  serial,
  type VolumeState,
  writeLedger,
} from "./volume_state.ts";
import { runStep } from "./volume_steps.ts";
import { asRpc, copyFromWire, copyToWire } from "./volume_wire.ts";
import { messageOf } from "../util/mod.ts";

/** How long a SetVolumeCopy request waits on its task before answering `busy`. */
export const COPY_ANSWER_MS = 3_000;

/** Answers the request: at once when nothing is to change, else when its step's task ends or the wait does. */
export async function setVolumeCopy(
  state: VolumeState,
  req: SetVolumeCopyRequest,
): Promise<SetVolumeCopyResponse> {
  const volume = checkVolumeName(req.volume);
  const key = JSON.stringify([req.expected, req.wanted, req.gen]);
  const running = state.tasks.get(volume);
  if (running !== undefined && running.key === key) return await awaitTask(state, volume, running);
  const decided = await serial(state, () => decideInTurn(state, volume, key, req));
  return "outcome" in decided ? decided : await awaitTask(state, volume, decided);
}

/** This Machine's answer: the outcome, with its copy and floor as they are now. */
async function answer(
  state: VolumeState,
  volume: string,
  outcome: SetVolumeCopyResponse["outcome"],
): Promise<SetVolumeCopyResponse> {
  return {
    "machine_id": state.host.self().id,
    volume,
    outcome,
    copy: copyToWire(await currentCopy(state, volume)),
    floor: (await readLedger(state))[volume]?.floor ?? 0,
  };
}

/** Waits on a step's task at most {@link COPY_ANSWER_MS}: `busy` while it runs, `done` once it ended well. */
async function awaitTask(state: VolumeState, volume: string, task: CopyTask): Promise<SetVolumeCopyResponse> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([task.done, new Promise((r) => (timer = setTimeout(r, COPY_ANSWER_MS)))]);
  clearTimeout(timer);
  if (!task.finished) return await answer(state, volume, "busy");
  if (task.error !== undefined) {
    state.tasks.delete(volume);
    throw task.error;
  }
  return await answer(state, volume, "done");
}

/**
 * Decides the request against the copy and floor as they are now (in turn with every other Volume change): refused,
 * already at what it wants (a Writer{start} starts its Container again), or a step started as a task.
 */
async function decideInTurn(
  state: VolumeState,
  volume: string,
  key: string,
  req: SetVolumeCopyRequest,
): Promise<SetVolumeCopyResponse | CopyTask> {
  const { host, tasks } = state;
  const self = host.self();
  // Checked here, in turn, not before: a request queued behind one that started a task (a killed run's receive)
  // must see that task, or it would be decided against a copy the task is still changing.
  const now = tasks.get(volume);
  if (now !== undefined && !now.finished) {
    if (now.key === key) return now;
    throw new RpcError(
      "busy",
      `Another transition of Volume "${volume}" runs on Machine "${self.name}"`,
      { details: { volume, copy: copyToWire(await currentCopy(state, volume)) } },
    );
  }
  tasks.delete(volume);
  const ledger = await readLedger(state);
  const floor = ledger[volume]?.floor ?? 0;
  const current = await currentCopy(state, volume);
  const decision = decideCopy(current, floor, {
    expected: copyFromWire(req.expected),
    wanted: copyFromWire(req.wanted),
    gen: req.gen,
  });
  if (decision.kind === "refused") {
    throw new RpcError("conflict", `Volume "${volume}" on Machine "${self.name}": ${decision.message}`, {
      details: { volume, reason: decision.reason, copy: copyToWire(current), floor },
    });
  }
  const next = floorAfter(floor, req.gen, decision);
  if (next !== floor) {
    ledger[volume] = { ...ledger[volume], floor: next };
    await writeLedger(state, ledger);
  }
  if (decision.kind === "at_want") {
    // Writer{start} again on a Writer: its Container is found by creation key and started (Docker runs once).
    const spec = req.start?.spec as ContainerSpec | undefined;
    if (req.wanted.role === "writer" && spec !== undefined && host.ensureStarted !== undefined) {
      await host.ensureStarted(spec);
    }
    return await answer(state, volume, "at_want");
  }
  const step = decision.step;
  host.log(`volume: ${volume}: ${step.kind} toward ${JSON.stringify(copyAfter(step))} (gen ${req.gen})`);
  const task: CopyTask = { key, finished: false, done: Promise.resolve() };
  task.done = runStep(state.steps, volume, step, req).then(
    () => {
      task.finished = true;
    },
    (error) => {
      task.finished = true;
      task.error = error instanceof VolumeError ? asRpc(error) : error;
      host.log(`volume: ${volume}: ${step.kind} failed: ${messageOf(error)}`);
    },
  ).finally(() => publish(state).catch(() => {}));
  tasks.set(volume, task);
  return task;
}
