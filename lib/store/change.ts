/**
 * A change is one write by one site: the unit of replication. `(site, version)` names it uniquely; versions
 * of a site start at 1 and have no holes at their origin.
 *
 * @module
 */

import * as z from "zod";
import { HLC_PATTERN } from "./hlc.ts";
import { SIGNATURE_PATTERN } from "./signing.ts";
import { TABLE_NAME_PATTERN, TABLES } from "./tables.ts";

/** Site ids are Machine ids. */
export const SITE_ID_PATTERN: RegExp = /^[a-z0-9-]{1,64}$/;

/** Largest body, in UTF-16 code units of its JSON text, a change may carry. */
export const MAX_BODY_CHARS = 256 * 1024;

/** Longest key a change may carry. */
export const MAX_KEY_CHARS = 1024;

/** One replicated write. `body` is JSON text, kept verbatim; `null` with `deleted` is a tombstone. */
export interface Change {
  /** Writing site (Machine id). */
  site: string;
  /** Position in the writing site's sequence, from 1. */
  version: number;
  /** Table name. */
  table: string;
  /** Row key. */
  key: string;
  /** Hybrid logical clock of the write. */
  hlc: string;
  /** The owning site for entity tables, "" for name tables. */
  owner: string;
  /** True for a tombstone. */
  deleted: boolean;
  /** JSON text of the body, or null for a tombstone. */
  body: string | null;
  /** Ed25519 signature by the writing site's key (base64); added when the change first leaves its Machine. */
  sig?: string;
}

/** Wire shape of a change, checked before any table rule. */
export const ChangeSchema: z.ZodType<Change> = z.object({
  site: z.string().regex(SITE_ID_PATTERN),
  version: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  table: z.string().regex(TABLE_NAME_PATTERN),
  key: z.string().min(1).max(MAX_KEY_CHARS),
  hlc: z.string().regex(HLC_PATTERN),
  owner: z.string().max(64),
  deleted: z.boolean(),
  body: z.string().max(MAX_BODY_CHARS).nullable(),
  sig: z.string().regex(SIGNATURE_PATTERN).optional(),
});

/** True when change `a` beats the row state `b` under last-writer-wins: higher HLC, then higher site id. */
export function supersedes(a: { hlc: string; site: string }, b: { hlc: string; site: string }): boolean {
  if (a.hlc !== b.hlc) return a.hlc > b.hlc;
  return a.site > b.site;
}

/** Parses a JSON body and checks it is an object. Returns the reason on failure. */
export function parseBodyText(text: string): Record<string, unknown> | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return "body is not JSON";
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return "body is not a JSON object";
  return value as Record<string, unknown>;
}

/**
 * Checks a change against the wire shape and the table rules. Returns the reason it is refused, or the change
 * with its parsed body (absent for tombstones) so the caller need not parse it again. The verdict depends on the
 * change alone, so every replica reaches the same one.
 */
export function checkChange(
  input: unknown,
): { change: Change; body?: Record<string, unknown> } | { reason: string } {
  const parsed = ChangeSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { reason: `Malformed change: ${issue.path.join(".") || "change"}: ${issue.message}` };
  }
  const change = parsed.data;
  if (change.deleted !== (change.body === null)) {
    return {
      reason: `Malformed change: deleted is ${change.deleted} but body is ${
        change.body === null ? "absent" : "present"
      }`,
    };
  }
  let body: Record<string, unknown> | undefined;
  if (change.body !== null) {
    const result = parseBodyText(change.body);
    if (typeof result === "string") return { reason: `Malformed change: ${result}` };
    body = result;
  }
  const spec = TABLES[change.table];
  // A table from a newer release is carried and relayed unread, so older Machines never block on it.
  if (spec === undefined) return { change, body };
  if (body !== undefined) {
    const checked = spec.schema.safeParse(body);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      return { reason: `Invalid ${change.table} body: ${issue.path.join(".")}: ${issue.message}` };
    }
    const key = spec.keyOf(body);
    if (key !== change.key) return { reason: `Key "${change.key}" does not match body key "${key}"` };
  }
  if (spec.kind === "name") {
    if (change.owner !== "") return { reason: `Name-keyed table "${change.table}" takes no owner` };
    return { change, body };
  }
  if (change.owner !== change.site) {
    return {
      reason:
        `Refused ${change.table} row "${change.key}": owned by "${change.owner}", written by "${change.site}"`,
    };
  }
  const named = body !== undefined ? spec.ownerOfBody?.(body) : spec.ownerOfKey?.(change.key);
  if (named !== undefined && named !== change.owner) {
    return {
      reason:
        `Refused ${change.table} row "${change.key}": names owner "${named}", written by "${change.site}"`,
    };
  }
  return { change, body };
}
