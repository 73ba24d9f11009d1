/**
 * The steps of a SetVolumeCopy transition on this Machine, once the transition table chose one: receive a Snapshot
 * from the Machine that holds it, cut (stop the Container, take the final Snapshot, demote to a Mirror), promote (and
 * start the Container the request names), destroy.
 *
 * @module
 */

import type { ContainerSpec } from "../deploy/machine/mod.ts";
import { PROTOCOL_MAJOR, RpcError, type SetVolumeCopyRequest } from "../rpc/mod.ts";
import type { CopyStep, Pool } from "../volume/mod.ts";
import { readErrorResponse } from "./forward.ts";
import type { Ledger, LedgerEntry } from "./volume_ledger.ts";
import type { VolumeHost } from "./volume_runtime.ts";

/** The bound of one transition's task (a receive of a large Volume over the mesh). */
export const COPY_TASK_MS = 30 * 60_000;

/** What a step needs from the volume runtime. */
export interface StepContext {
  /** The daemon's side: this Machine, its peers, its Docker. */
  host: Pick<VolumeHost, "self" | "resolve" | "stopping" | "engine" | "ensureStarted">;
  /** The bound Pool; throws `unsupported` when there is none. */
  pool(): Pool;
  /** Reads the ledger. */
  readLedger(): Promise<Ledger>;
  /** Changes `volume`'s ledger entry, in turn with every other change of the ledger. */
  patchLedger(volume: string, patch: (entry: LedgerEntry) => LedgerEntry): Promise<void>;
  /** This Machine's Containers that mount `volume`. */
  containersOf(volume: string, project: string | undefined): Promise<string[]>;
  /** Keeps the newest two run Snapshots of `volume`. */
  prune(volume: string): Promise<void>;
}

async function receive(
  ctx: StepContext,
  volume: string,
  step: Extract<CopyStep, { kind: "receive" }>,
  req: SetVolumeCopyRequest,
): Promise<void> {
  const self = ctx.host.self();
  const from = req.source_machine_id;
  if (from === undefined || from === self.id) {
    throw new RpcError(
      "invalid_argument",
      `A receive of "${volume}" names the Machine to pull from (source_machine_id)`,
    );
  }
  const peer = ctx.host.resolve?.(from);
  if (peer === undefined) {
    throw new RpcError(
      "not_found",
      `Machine "${self.name}" holds no row for Machine "${from}" to pull "${volume}" from`,
    );
  }
  const p = ctx.pool();
  if (req.size_bytes !== undefined) {
    const space = await p.space();
    if (space.freeBytes < Math.min(req.size_bytes, space.totalBytes) / 4) {
      throw new RpcError(
        "unavailable",
        `Machine "${self.name}" has ${space.freeBytes} bytes free in its Pool: too little to receive "${volume}"`,
      );
    }
  }
  const signal = AbortSignal.any([
    AbortSignal.timeout(COPY_TASK_MS),
    ...(ctx.host.stopping ? [ctx.host.stopping] : []),
  ]);
  const response = await fetch(`http://${peer.hostname}:${peer.port}/rpc/ployz.volume.send.v1`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      "protocol_major": PROTOCOL_MAJOR,
      volume,
      snapshot: step.snapshot,
      ...(step.base === undefined ? {} : { base: step.base }),
    }),
    signal,
  });
  if (!response.ok || response.body === null) {
    const error = await readErrorResponse(response, `Machine "${peer.name}"`);
    throw new RpcError(
      error.code,
      `Machine "${peer.name}" cannot send "${volume}@${step.snapshot}": ${error.message}`,
    );
  }
  await p.receive(volume, step.snapshot, response.body, signal);
  await ctx.patchLedger(volume, (entry) => ({ ...entry, sizeBytes: req.size_bytes ?? entry.sizeBytes }));
  await ctx.prune(volume);
}

/** Runs the step the transition table chose for `volume`, as `req` asked. */
export async function runStep(
  ctx: StepContext,
  volume: string,
  step: CopyStep,
  req: SetVolumeCopyRequest,
): Promise<void> {
  const p = ctx.pool();
  const ledger = await ctx.readLedger();
  switch (step.kind) {
    case "receive":
      return await receive(ctx, volume, step, req);
    case "cut": {
      // The Container stops and is kept (an undo starts it again); the final Snapshot is taken after it stopped.
      for (const id of await ctx.containersOf(volume, ledger[volume]?.project)) {
        await ctx.host.engine!.stopContainer(id);
      }
      const held = await p.inspect(volume);
      if (!held?.snapshots.includes(step.snapshot)) await p.snapshot(volume, step.snapshot);
      await p.demote(volume);
      await ctx.prune(volume);
      return;
    }
    case "promote": {
      const size = req.size_bytes ?? ledger[volume]?.sizeBytes;
      if (size === undefined) {
        throw new RpcError("invalid_argument", `Promoting "${volume}" needs its size (size_bytes)`);
      }
      await p.promote(volume, step.snapshot, size);
      const spec = req.start?.spec as ContainerSpec | undefined;
      await ctx.patchLedger(volume, (entry) => ({
        ...entry,
        sizeBytes: size,
        epoch: step.epoch,
        ...(spec?.project === undefined ? {} : { project: spec.project }),
      }));
      if (spec !== undefined) {
        if (ctx.host.ensureStarted === undefined) {
          throw new RpcError("unsupported", `Machine "${ctx.host.self().name}" cannot start Containers`);
        }
        await ctx.host.ensureStarted(spec);
      }
      return;
    }
    case "destroy": {
      const users = await ctx.containersOf(volume, ledger[volume]?.project);
      if (users.length > 0) {
        throw new RpcError(
          "conflict",
          `Volume "${volume}" is mounted by ${users.length} Container(s) on Machine "${ctx.host.self().name}": remove its Service first`,
        );
      }
      await p.destroy(volume);
      return;
    }
  }
}
