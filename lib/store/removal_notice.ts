/**
 * What a Machine retired while gone (`machine rm --gone`) is told when it comes back. Its peers keep answering it,
 * and only it, on the one mesh endpoint (store sync and Machine RPC), with a refusal carrying the signed
 * `retired_machines` row that names it: who retired it and when. The returning Machine checks that row as it would
 * any replicated change (shape, table rules, the signature of an admitted Machine) and that it names itself, so a
 * peer cannot talk it out of the Cluster with a row nobody admitted signed. The row is not merged: a Machine that
 * held its own retirement would leave itself out of its own views and serving.
 *
 * @module
 */

import { type Change, checkChange } from "./change.ts";
import type { ErrorBody } from "./protocol.ts";
import { changeMessage, SignatureVerifier } from "./signing.ts";
import type { Store } from "./store.ts";

/** The `details` field of a refusal that carries the signed retired row. */
export const REMOVED_DETAIL = "removed";

/** Why this Machine is refused by its Cluster, as checked from the signed retired row. */
export interface RemovalNotice {
  /** This Machine's id, which the row names. */
  machineId: string;
  /** The Machine that wrote (and signed) the row. */
  retiredBy: string;
  /** That Machine's name, as this Machine's copy of the store has it. */
  retiredByName?: string;
  /** When it was written, as the row says (ISO 8601). */
  retiredAt?: string;
  /** This Machine's name as the row recorded it. */
  name?: string;
}

const verifier = new SignatureVerifier();

/**
 * The refusal a Machine answers a retired Machine with, on every request: `unauthenticated`, naming who retired
 * it and when, and carrying the signed row. `undefined` when this store holds no retired row for `machineId`.
 */
export async function removedRefusal(store: Store, machineId: string): Promise<ErrorBody | undefined> {
  const row = store.retiredMachines.get(machineId);
  const change = store.rowChange("retired_machines", machineId);
  if (row === undefined || change === undefined) return undefined;
  const [signed] = await store.outbound([change]);
  const by = store.machines.get(signed.site)?.name ?? signed.site;
  return {
    code: "unauthenticated",
    message:
      `Machine "${row.name ?? machineId}" (${machineId}) was removed from this Cluster by Machine "${by}"` +
      ` at ${row.retired_at ?? "an unknown time"} ("machine rm --gone"): every request from it is refused`,
    details: { [REMOVED_DETAIL]: signed },
  };
}

/**
 * Checks a refusal's `details` as another Machine's word: the signed row must be a `retired_machines` row naming
 * this store's own site, signed with the admitted key of the Machine that wrote it. Returns the notice, or why it
 * was not believed. Pure apart from reading admitted keys and names from `store`.
 */
export function readRemovalNotice(store: Store, details: unknown): RemovalNotice | { reason: string } {
  const input = details !== null && typeof details === "object"
    ? (details as Record<string, unknown>)[REMOVED_DETAIL]
    : undefined;
  if (input === undefined) return { reason: "the refusal carries no signed retired row" };
  const checked = checkChange(input);
  if ("reason" in checked) return { reason: checked.reason };
  const change: Change = checked.change;
  if (change.table !== "retired_machines" || checked.body === undefined) {
    return { reason: `the signed row is a ${change.deleted ? "tombstone" : "row"} of "${change.table}"` };
  }
  if (change.key !== store.siteId) {
    return { reason: `the signed row retires Machine "${change.key.slice(0, 64)}", not this one` };
  }
  if (store.authenticated) {
    const key = store.trustedKey(change.site);
    if (key === undefined) return { reason: `it is signed by Machine "${change.site}", not admitted here` };
    if (
      change.sig === undefined ||
      !verifier.verifySync(key, change.sig, changeMessage(store.clusterId, change))
    ) {
      return { reason: `its signature is not Machine "${change.site}"'s` };
    }
  }
  const body = checked.body;
  const text = (value: unknown): string | undefined =>
    typeof value === "string" && value.length > 0 ? value.slice(0, 128) : undefined;
  const notice: RemovalNotice = { machineId: change.key, retiredBy: change.site };
  const byName = text(store.machines.get(change.site)?.name);
  if (byName !== undefined) notice.retiredByName = byName;
  const at = text(body.retired_at);
  if (at !== undefined) notice.retiredAt = at;
  const name = text(body.name);
  if (name !== undefined) notice.name = name;
  return notice;
}
