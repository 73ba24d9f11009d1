/**
 * How changes enter a store: local writes, and remote changes screened, authenticated and merged (last writer
 * wins on (hlc, site)), plus the signing and high-water mark of changes leaving this Machine.
 *
 * @module
 */

import { type Change, checkChange, MAX_BODY_CHARS } from "./change.ts";
import { rejection, type Screened } from "./change_rows.ts";
import { StoreError } from "./errors.ts";
import { MAX_CLOCK_SKEW_MS } from "./hlc.ts";
import { changeMessage } from "./signing.ts";
import type { StoreCore } from "./store_core.ts";
import type { ApplyResult } from "./store_types.ts";
import type { TableSpec } from "./tables.ts";
import { writeFileAtomic } from "../util/mod.ts";

// One write at a time, each of the highest version asked for so far, so a slower write of a lower mark can
// never land after a higher one.
async function ensureDurable(core: StoreCore, version: number): Promise<void> {
  if (version <= core.durableVersion || core.hwmPath === undefined) return;
  const path = core.hwmPath;
  core.hwmTarget = Math.max(core.hwmTarget, version);
  const run = core.hwmWrites.then(async () => {
    const target = core.hwmTarget;
    if (target <= core.durableVersion) return;
    await writeFileAtomic(path, `${target}\n`, { mode: 0o600 });
    core.durableVersion = target;
  });
  core.hwmWrites = run.catch(() => {});
  try {
    await run;
  } catch (error) {
    throw new StoreError("unavailable", `Cannot record the version high-water mark: ${String(error)}`, {
      cause: error,
    });
  }
}

/**
 * Prepares changes to leave this Machine: signs this Machine's own changes not signed yet (keeping the
 * signatures in the log) and makes the version high-water mark durable past them, so a crash that loses the
 * log's tail can never make this Machine reuse a version a peer already holds. Call before sending.
 */
export async function outbound(core: StoreCore, changes: readonly Change[]): Promise<Change[]> {
  core.assertOpen();
  let highest = 0;
  const signer = core.signer;
  const signed: Change[] = [];
  // Signed concurrently, and the version mark synced meanwhile: both before anything leaves.
  const ready = changes.map(async (change): Promise<Change> => {
    if (change.site !== core.siteId) return change;
    highest = Math.max(highest, change.version);
    if (signer === undefined || change.sig !== undefined) return change;
    const copy = { ...change, sig: await signer.sign(changeMessage(core.clusterId, change)) };
    signed.push(copy);
    return copy;
  });
  const [out] = await Promise.all([
    Promise.all(ready),
    Promise.resolve().then(() => ensureDurable(core, highest)),
  ]);
  if (core.closed) throw new StoreError("unavailable", `Store is closed: site "${core.siteId}"`);
  if (signed.length > 0) {
    core.transaction(() => {
      const update = core.statement(
        `UPDATE changes SET sig = ? WHERE site = ? AND version = ? AND sig IS NULL`,
      );
      for (const c of signed) update.run(c.sig!, c.site, c.version);
    });
  }
  return out;
}

/** @internal Writes one local change: the body, or a tombstone when `body` is null. */
export function writeLocal(
  core: StoreCore,
  spec: TableSpec,
  key: string,
  body: Record<string, unknown> | null,
): Change {
  core.assertOpen();
  let text: string | null = null;
  if (body !== null) {
    const checked = spec.schema.safeParse(body);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      throw new StoreError(
        "invalid_argument",
        `Invalid ${spec.name} body "${key}": ${issue.path.join(".")}: ${issue.message}`,
      );
    }
    text = JSON.stringify(body);
    if (text.length > MAX_BODY_CHARS) {
      throw new StoreError(
        "invalid_argument",
        `Body too large for ${spec.name} row "${key}": ${text.length} chars`,
      );
    }
  }
  const written = core.transaction(() => {
    const owner = spec.kind === "entity" ? localOwner(core, spec, key, body) : "";
    const change: Change = {
      site: core.siteId,
      version: core.ownVersion + 1,
      table: spec.name,
      key,
      hlc: core.clock.tick(),
      owner,
      deleted: body === null,
      body: text,
    };
    core.insertChange(change);
    // The clock is past every timestamp seen, so a local write always wins its row; the statement only refuses
    // a row another site owns, which saves reading the row first.
    if (!core.putRow(spec, core.rowWriters(spec).local, change, body ?? undefined)) {
      const existing = core.rowOwner(spec.name, key);
      throw new StoreError(
        "conflict",
        `Cannot write ${spec.name} row "${key}": owned by Machine "${existing}", this is Machine "${core.siteId}"`,
      );
    }
    core.ownVersion = change.version;
    if (core.ownContiguous === change.version - 1) core.ownContiguous = change.version;
    return change;
  });
  // Listeners run after COMMIT, never inside the transaction.
  core.emit({ seq: core.seq, changes: [written], origin: "local" });
  return written;
}

// The owner the body or key names; the row's current owner is checked by the write itself.
function localOwner(
  core: StoreCore,
  spec: TableSpec,
  key: string,
  body: Record<string, unknown> | null,
): string {
  const named = body !== null
    ? spec.ownerOfBody?.(body)
    : spec.ownerOfKey?.(key) ?? core.rowOwner(spec.name, key);
  if (named === undefined) {
    throw new StoreError(
      "not_found",
      `Cannot delete ${spec.name} row "${key}": no such row on this Machine`,
    );
  }
  if (named !== core.siteId) {
    throw new StoreError(
      "conflict",
      `Cannot write ${spec.name} row "${key}": owned by Machine "${named}", this is Machine "${core.siteId}"`,
    );
  }
  return core.siteId;
}

// Shape, table rules, clock bound and duplicates: everything decided without a signature.
export function screen(
  core: StoreCore,
  inputs: readonly unknown[],
): { result: ApplyResult; valid: Screened[] } {
  core.assertOpen();
  const result: ApplyResult = { applied: 0, duplicates: 0, rejected: [] };
  const valid: Screened[] = [];
  const exists = core.statement(`SELECT 1 FROM changes WHERE site = ? AND version = ?`);
  const floor = core.statement(`SELECT floor FROM sites WHERE site = ?`);
  inputs.forEach((input, index) => {
    const checked = checkChange(input);
    if ("reason" in checked) {
      const raw = (input ?? {}) as { site?: unknown; version?: unknown };
      result.rejected.push({
        index,
        site: typeof raw.site === "string" ? raw.site.slice(0, 64) : undefined,
        version: typeof raw.version === "number" ? raw.version : undefined,
        reason: checked.reason,
      });
      return;
    }
    const { change } = checked;
    const ahead = core.clock.aheadMs(change.hlc);
    if (ahead > MAX_CLOCK_SKEW_MS) {
      result.rejected.push(rejection(
        index,
        change,
        `Refused change ${change.site}:${change.version}: its clock is ${
          Math.round(ahead / 1000)
        } s ahead of this Machine's (limit ${MAX_CLOCK_SKEW_MS / 1000} s)`,
      ));
      return;
    }
    // A version at or below the site's floor is held or was compacted away: applying it again could bring
    // back a row whose tombstone is gone.
    if (
      exists.get(change.site, change.version) !== undefined ||
      change.version <= Number(floor.get(change.site)?.floor ?? 0)
    ) {
      result.duplicates += 1;
      return;
    }
    valid.push({ index, ...checked });
  });
  return { result, valid };
}

// Keeps the changes signed by their site's admitted key. An admission in the batch admits its Machine for the
// rest of the batch, so a joiner's first changes may travel with the admission that vouches for them.
function authenticate(core: StoreCore, result: ApplyResult, valid: Screened[]): Screened[] {
  if (core.signer === undefined) return valid;
  const admitted = new Map<string, string>();
  const keyOf = (site: string): string | undefined => admitted.get(site) ?? core.trustedKey(site);
  const accepted: Screened[] = [];
  let pending = valid;
  for (;;) {
    const waiting: Screened[] = [];
    for (const item of pending) {
      const { change, body, index } = item;
      const key = keyOf(change.site);
      if (key === undefined) {
        waiting.push(item);
        continue;
      }
      const good = change.sig !== undefined &&
        core.verifier.verifySync(key, change.sig, changeMessage(core.clusterId, change));
      if (!good) {
        const what = change.sig === undefined ? "it is not signed" : "its signature does not match";
        result.rejected.push(
          rejection(index, change, `Refused change ${change.site}:${change.version}: ${what}`),
        );
        continue;
      }
      const refusal = trustRule(change, body, key, keyOf);
      if (refusal !== undefined) {
        result.rejected.push(rejection(index, change, refusal));
        continue;
      }
      if (change.table === "members" && body !== undefined) {
        admitted.set(String(body.machine_id), String(body.signing_key));
      }
      accepted.push(item);
    }
    if (waiting.length === pending.length || waiting.length === 0) {
      for (const { index, change } of waiting) {
        result.rejected.push(rejection(
          index,
          change,
          `Refused change ${change.site}:${change.version}: Machine "${change.site}" is not admitted here`,
        ));
      }
      return accepted;
    }
    pending = waiting;
  }
}

// Rules that depend on who is admitted: keys never change, admissions are never withdrawn, and a Machine row
// names the key that signed it.
function trustRule(
  change: Change,
  body: Record<string, unknown> | undefined,
  key: string,
  keyOf: (site: string) => string | undefined,
): string | undefined {
  if (change.table === "members") {
    if (body === undefined) {
      return `Refused change ${change.site}:${change.version}: admissions are never deleted`;
    }
    const held = keyOf(String(body.machine_id));
    if (held !== undefined && held !== body.signing_key) {
      return `Refused change ${change.site}:${change.version}: Machine "${body.machine_id}" is admitted with another key`;
    }
  }
  if (change.table === "machines" && body?.signing_key !== undefined && body.signing_key !== key) {
    return `Refused change ${change.site}:${change.version}: its signing_key is not the key it is signed with`;
  }
  return undefined;
}

export function commitRemote(
  core: StoreCore,
  result: ApplyResult,
  screened: Screened[],
  pulled: boolean,
): ApplyResult {
  const valid = authenticate(core, result, screened);
  result.rejected.sort((a, b) => a.index - b.index);
  if (valid.length === 0) return result;
  const fresh: Change[] = [];
  const seqBefore = core.seq;
  try {
    core.transaction(() => {
      const touched = new Map<string, number>();
      const exists = core.statement(`SELECT 1 FROM changes WHERE site = ? AND version = ?`);
      for (const { change, body } of valid) {
        if (exists.get(change.site, change.version) !== undefined) {
          result.duplicates += 1;
          continue;
        }
        core.insertChange(change);
        core.clock.observe(change.hlc);
        core.merge(change, body);
        touched.set(change.site, Math.max(touched.get(change.site) ?? 0, change.version));
        fresh.push(change);
      }
      for (const [site, max] of touched) core.advance(site, max);
      result.applied = fresh.length;
    });
  } catch (error) {
    core.seq = seqBefore;
    if (error instanceof StoreError) throw error;
    throw new StoreError("internal", `Cannot apply ${valid.length} changes: ${String(error)}`, {
      cause: error,
    });
  }
  const own = fresh.filter((c) => c.site === core.siteId);
  // Our own changes coming back (a restored file) must not let us reuse their versions.
  for (const change of own) core.ownVersion = Math.max(core.ownVersion, change.version);
  if (fresh.length > 0) core.emit({ seq: core.seq, changes: fresh, origin: "remote", pulled });
  return result;
}
