/**
 * The volume runtime's local ledger (`<data>/volumes.json`, 0600): what the Pool cannot keep about each Volume held
 * here — its Project, its size, a Writer's epoch and the SetVolumeCopy floor — and the Machine's default Volume size
 * (`<data>/volume_defaults.json`, 0600).
 *
 * @module
 */

import { messageOf, readTextIfPresent, writeFileAtomic } from "../util/mod.ts";
import { RpcError } from "../rpc/mod.ts";
import { VolumeError } from "../volume/mod.ts";

/** What the ledger keeps per Volume. */
export interface LedgerEntry {
  project?: string;
  sizeBytes?: number;
  epoch?: number;
  floor?: number;
}

/** The ledger, by Volume name. */
export type Ledger = Record<string, LedgerEntry>;

/** Reads the ledger at `path`; absent, it is empty. */
export async function readLedgerFile(path: string): Promise<Ledger> {
  try {
    const text = await readTextIfPresent(path);
    if (text === undefined) return {};
    const parsed = JSON.parse(text);
    return typeof parsed === "object" && parsed !== null ? parsed : {};
  } catch (error) {
    throw new VolumeError("internal", `${path} cannot be read: ${messageOf(error)}`);
  }
}

/** Writes the ledger at `path` durably (atomic replace, 0600). */
export async function writeLedgerFile(path: string, ledger: Ledger): Promise<void> {
  await writeFileAtomic(path, JSON.stringify(ledger, null, 2) + "\n", { mode: 0o600 });
}

/**
 * Reads the Machine's default Volume size at `path` (`<data>/volume_defaults.json`): for a Provisioned Volume
 * whose `x-volumes` names none. Absent or not a positive integer, there is none.
 */
export async function readDefaultSizeFile(path: string): Promise<number | undefined> {
  try {
    const text = await readTextIfPresent(path);
    if (text === undefined) return undefined;
    const size = (JSON.parse(text) as { "default_size_bytes"?: unknown })?.default_size_bytes;
    return typeof size === "number" && Number.isSafeInteger(size) && size > 0 ? size : undefined;
  } catch (error) {
    throw new VolumeError("internal", `${path} cannot be read: ${messageOf(error)}`);
  }
}

/** Writes the Machine's default Volume size at `path` durably (atomic replace, 0600). */
export async function writeDefaultSizeFile(path: string, bytes: number): Promise<void> {
  await writeFileAtomic(path, JSON.stringify({ "default_size_bytes": bytes }) + "\n", { mode: 0o600 });
}

/**
 * Refuses to remove `volume` for a removal of `project` when the ledger records it for another Project. The name
 * prefix (`<project>_`) is checked before; the ledger is what this Machine itself recorded when the Volume was
 * created or promoted here. A copy the ledger names no Project for (a Mirror received here) rests on the prefix.
 */
export function assertLedgerProject(ledger: Ledger, volume: string, project: string): void {
  const owner = ledger[volume]?.project;
  if (owner === undefined || owner === project) return;
  throw new RpcError(
    "conflict",
    `Volume "${volume}" belongs to Project "${owner}", not "${project}": not removed`,
    {
      details: { volume, expected: project, found: owner },
    },
  );
}
