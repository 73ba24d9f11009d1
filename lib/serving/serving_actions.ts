/**
 * What a serving pass does once it has written the DNS spec and loaded the Ingress Proxy: write this Machine's acks
 * (Serving Pointers, removal marks, leaving containers, ACME challenges), stop retired containers and remove those a
 * removal mark covers once no loaded config dials them, and remove a mark's volumes once none of its containers is
 * left here. Each action's failure is added to the pass's errors; the next pass tries again.
 *
 * @module
 */

import type { Engine } from "../deploy/machine/mod.ts";
import type { Container, Removal, ServingPointer, Store } from "../store/mod.ts";
import { writeAcks } from "./acks.ts";
import { challengeAcksToWrite, staleChallengeAcks } from "./challenge_acks.ts";
import { leaveAcksToWrite, staleLeaveAcks } from "./leaving.ts";
import {
  activeRemoval,
  coveringRemoval,
  markVolumes,
  removalAcksToWrite,
  type RemovalDecision,
} from "./removal.ts";
import { noteVolumeError } from "./removal_rows.ts";
import type { RetireDecision } from "./retire.ts";

/** What one pass acts with: this Machine's store and Docker, the pass's abort signal, its log and its errors. */
export interface PassContext {
  store: Store;
  engine: Engine;
  machineId: string;
  signal: AbortSignal;
  log: (line: string) => void;
  errors: string[];
}

// Whether the config the local proxy loaded still dials one of the container's addresses: it is not stopped yet.
function stillDialled(dials: readonly string[], row: Container | undefined): boolean {
  const addresses = row?.addresses ?? [];
  return dials.some((d) => addresses.some((a) => d.startsWith(`${a}:`)));
}

/** Writes this Machine's Serving Pointer, removal and leave acks; returns how many it wrote. */
export function writeServingAcks(
  ctx: PassContext,
  pointers: ServingPointer[],
  removals: Removal[],
  containers: Container[],
  held: ReadonlySet<string>,
): number {
  const { store, machineId, errors } = ctx;
  let acks = 0;
  try {
    acks = writeAcks(store, pointers);
    for (const row of removalAcksToWrite(machineId, removals, store.acks.list(), new Date())) {
      store.acks.put(row);
      acks++;
    }
    for (const row of leaveAcksToWrite(machineId, containers, store.acks.list(), new Date(), held)) {
      store.acks.put(row);
      acks++;
    }
    for (const key of staleLeaveAcks(machineId, containers, store.acks.list())) store.acks.delete(key);
  } catch (error) {
    errors.push(`cannot write acks: ${(error as Error).message}`);
  }
  return acks;
}

/** Acks the ACME challenges the local proxy answers (`tokens`) and withdraws the others. */
export function writeChallengeAcks(ctx: PassContext, tokens: string[]): void {
  const { store, machineId, errors } = ctx;
  try {
    const current = store.acks.list();
    for (const row of challengeAcksToWrite(machineId, tokens, current, new Date())) store.acks.put(row);
    for (const key of staleChallengeAcks(machineId, tokens, current)) store.acks.delete(key);
  } catch (error) {
    errors.push(`cannot write challenge acks: ${(error as Error).message}`);
  }
}

/** Stops the containers the retire decision retires, once no loaded config dials them; returns their ids. */
export async function stopRetired(
  ctx: PassContext,
  retire: RetireDecision,
  containers: Container[],
  dials: readonly string[],
): Promise<string[]> {
  const { engine, signal, log, errors } = ctx;
  const stopped: string[] = [];
  for (const item of retire.retire) {
    if (stillDialled(dials, containers.find((r) => r.id === item.containerId))) continue;
    try {
      await engine.stopContainer(item.containerId, { signal });
      stopped.push(item.containerId);
      log(
        `serving: retired "${item.name}" (${item.reason}): superseded by Deployment "${item.deployment}"`,
      );
    } catch (error) {
      errors.push(`cannot stop "${item.name}": ${(error as Error).message}`);
    }
  }
  return stopped;
}

/**
 * Stops (when live) and removes the containers removal marks cover, once no loaded config dials them; returns their
 * ids. Each one waits out its own stop grace: all of them at once, so a removal takes one grace, not one per
 * container.
 */
export async function removeCovered(
  ctx: PassContext,
  removal: RemovalDecision,
  containers: Container[],
  dials: readonly string[],
): Promise<string[]> {
  const { engine, signal, log, errors } = ctx;
  const removed: string[] = [];
  await Promise.all(removal.remove.map(async (item) => {
    if (item.live && stillDialled(dials, containers.find((r) => r.id === item.containerId))) return;
    try {
      if (item.live) await engine.stopContainer(item.containerId, { signal });
      await engine.removeContainer(item.containerId, { signal });
      removed.push(item.containerId);
      log(`serving: removed "${item.name}" (removal of ${item.removal}: ${item.reason})`);
    } catch (error) {
      // Gone already (a `docker rm` by hand, or an earlier pass): nothing left to do.
      if ((error as { code?: string }).code === "not_found") return;
      errors.push(`cannot remove "${item.name}" (removal of ${item.removal}): ${(error as Error).message}`);
    }
  }));
  return removed;
}

/**
 * Removes a mark's volumes once none of this Machine's covered containers is left: Data Loss the operator confirmed.
 * Each volume is tried once per daemon run (`tried`), never on a timer; a refusal is logged and `rm --status` still
 * lists the mark.
 */
export async function removeMarkVolumes(
  ctx: PassContext,
  removals: Removal[],
  tried: Set<string>,
  removeProvisioned?: (volume: string, project: string) => Promise<boolean>,
): Promise<void> {
  const { store, engine, machineId, signal, log, errors } = ctx;
  for (const mark of removals.filter(activeRemoval)) {
    const { own: volumes, refused } = markVolumes(mark);
    for (const volume of refused) {
      const key = `${mark.id}/${volume}`;
      if (tried.has(key)) continue;
      tried.add(key);
      errors.push(
        `refused volume "${volume}" of the removal of ${mark.project}: not a volume of that Project`,
      );
    }
    if (volumes.length === 0) continue;
    const left = store.containers.list({ "machine_id": machineId }).some((r) => coveringRemoval(r, [mark]));
    if (left) continue;
    for (const volume of volumes) {
      const key = `${mark.id}/${volume}`;
      if (tried.has(key)) continue;
      tried.add(key);
      try {
        if (await engine.removeVolume(volume, signal, mark.project)) {
          log(`serving: removed volume "${volume}" (removal of ${mark.project}/${mark.service})`);
        }
        // A Provisioned Volume lives in the Pool, not in Docker: its copy here goes too (Writer or Mirror).
        if (await removeProvisioned?.(volume, mark.project)) {
          log(
            `serving: destroyed Provisioned Volume "${volume}" (removal of ${mark.project}/${mark.service})`,
          );
        }
      } catch (error) {
        const why = `cannot remove volume "${volume}": ${(error as Error).message}`;
        errors.push(why);
        try {
          noteVolumeError(store, machineId, mark, why);
        } catch (noted) {
          errors.push(`cannot record that on its ack: ${(noted as Error).message}`);
        }
      }
    }
  }
}
