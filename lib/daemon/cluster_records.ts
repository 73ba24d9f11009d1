/**
 * The record and store files of the Cluster lifecycle's transitions that are not found or join: the record a leave
 * writes, the record a proved removal writes, the refusal of a retired joiner, and the store file a leave sets aside.
 *
 * @module
 */

import { join } from "node:path";
import { RpcError } from "../rpc/mod.ts";
import type { RemovalNotice, RetiredMachine } from "../store/mod.ts";
import type { LocalMachine } from "./machine_file.ts";

/** The store file inside the data directory. */
export function storePath(dataDir: string): string {
  return join(dataDir, "store.db");
}

/** Removes the store file and its WAL and shared-memory files, those that exist. */
export async function removeStoreFiles(path: string): Promise<void> {
  for (const suffix of ["", "-wal", "-shm"]) {
    await Deno.remove(path + suffix).catch((error) => {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    });
  }
}

/**
 * Moves the store aside as `store.db.left-<time>` and removes what is left of it. Kept, not deleted: it is the only
 * copy of what this Machine saw, and a later join starts a fresh one.
 */
export async function setStoreAside(dataDir: string, now: Date): Promise<void> {
  const path = storePath(dataDir);
  const aside = `${path}.left-${now.toISOString().replaceAll(":", "")}`;
  await Deno.rename(path, aside).catch(() => {});
  await removeStoreFiles(path);
}

/** The record after leaving: uninitialized, keeping only its id, name, public key and creation time. */
export function leftRecord(record: LocalMachine): LocalMachine {
  const next: LocalMachine = { id: record.id, name: record.name, phase: "uninitialized" };
  for (const k of ["public_key", "created_at"]) if (record[k] !== undefined) next[k] = record[k];
  return next;
}

/** The record once a peer proved this Machine was retired: who removed it, when, and when this Machine noticed. */
export function removedRecord(record: LocalMachine, notice: RemovalNotice, noticedAt: Date): LocalMachine {
  const removed: NonNullable<LocalMachine["removed"]> = {
    by: notice.retiredBy,
    "noticed_at": noticedAt.toISOString(),
  };
  if (notice.retiredByName !== undefined) removed["by_name"] = notice.retiredByName;
  if (notice.retiredAt !== undefined) removed.at = notice.retiredAt;
  return { ...record, removed };
}

/** Refuses admitting a Machine retired while gone: its id is never admitted again. */
export function refuseRetired(machineId: string, retired: RetiredMachine | undefined): void {
  if (retired === undefined) return;
  throw new RpcError(
    "conflict",
    `Machine "${retired.name ?? machineId}" (${machineId}) was removed from this Cluster while gone ` +
      `(machine rm --gone, ${
        retired.retired_at ?? "earlier"
      }): reset it (a fresh data directory mints a new id) before adding it again`,
    { details: { "machine_id": machineId, retired: true } },
  );
}
