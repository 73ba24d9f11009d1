/**
 * The replicated Cluster store: every Machine holds a full copy in SQLite, and copies converge by exchanging
 * changes over HTTP. No Machine is special.
 *
 * Merge rule. Every write is a change `(site, version, table, key, hlc, owner, body)`; `version` counts the
 * writing site's changes from 1, `hlc` is a hybrid logical clock. A row holds the change with the greatest
 * `(hlc, site)`, so concurrent writes and deletes converge to one winner in any delivery order; deletes are
 * tombstone changes under the same rule, so delete-then-put resolves by the same order. Name-keyed tables
 * (cluster, certificates, serving_pointers, acme_challenges, certificate_errors) accept writes from every site. Entity-keyed tables (machines,
 * containers, volumes, acks) accept a change only when its `owner` is its `site` and its body or key names that
 * owner; a local write to another Machine's row is refused with `conflict`. The verdict depends only on the
 * change, so every replica reaches the same one.
 *
 * Authenticated origin. Every Machine signs its own changes with its Ed25519 key (field `sig`, added when a change
 * first leaves its Machine) and every receiver verifies a change against its site's admitted key before merging,
 * so before relaying it. A Machine is admitted by a `members` row (name-keyed, written by the Machine that ran
 * its join, itself admitted) or, on a joiner, by the anchors its join handed over; the founder admits itself. So
 * an entity row is accepted only with its owner's signature and a name-keyed fact from any admitted Machine's.
 * A change whose clock is more than {@linkcode MAX_CLOCK_SKEW_MS} (5 minutes) ahead of the receiver's is refused.
 *
 * Durability. The log runs with `synchronous=NORMAL`; before this Machine's changes leave it, a version
 * high-water mark (`<store>.version`) is synced to disk, and numbering resumes above it after a crash, so a
 * version a peer holds is never reused for a different change.
 *
 * Compaction. Each replica removes, on its own schedule, changes older than a horizon (default
 * {@linkcode COMPACTION_HORIZON_MS}, 7 days) that a newer change of the same row superseded, and tombstones older
 * than it: an entity row goes with its tombstone, a name-keyed row stays as a bare tombstone row (key and clock) so
 * a stale write cannot bring it back. Admissions stay. Only versions under a site's contiguous watermark go, and the
 * site's floor rises past them. A replica whose vector is below a peer's floor (cut off longer than the horizon)
 * cannot be brought level change by change: it takes a full copy of the peer's log, turns the rows the peer's
 * vector covers but the peer no longer holds into tombstones, and adopts the peer's watermarks and floors; its own
 * changes the peer lacked stay and travel as usual. A version at or below a floor is never applied again. Each
 * site's latest change survives compaction, so a floor is always followed by a change its site signed.
 *
 * A peer's word about what it holds is checked, not trusted. Its vector is bounded (1024 sites, 10,000 ranges)
 * and its floors must lie under its watermarks. A full copy is adopted only when every version the peer claims
 * above its floors is held here afterwards, every Machine it names is admitted, each floor is followed by a change
 * of its site and covers none newer than the horizon (all Machines compact with the same horizon), and every row
 * it buries lies at or below the floors. Otherwise the claim is refused and counted (a `refused` event, shown per
 * Machine by `ployz machine ls`), nothing is adopted or buried, and that peer is not asked for a full copy for 10
 * minutes. What is left to its word: that a row older than the horizon was deleted.
 *
 * Bodies are JSON kept verbatim; readers tolerate unknown fields and rewrites keep them. Tables and columns are
 * only added, with defaults; changes for a table this release does not know are stored and relayed unread.
 *
 * Sync. New changes are pushed at once to a few random peers (relayed once by receivers); anti-entropy with a
 * random peer exchanges version vectors and sends only what is missing. Vectors track a contiguous watermark
 * per site plus ranges held past a gap. Batches apply in one transaction and re-applying is a no-op.
 *
 * @module
 */

// The operator's Config Store: also a door of its own (./config/mod.ts), for CLI commands that need none of
// the replicated store.
export {
  type Allocation,
  ConfigStore,
  type ConfigStoreOptions,
  type ContextRecord,
  type DeploymentRecord,
  openConfigStore,
  type Receipt,
  type RegistryCredential,
  type SavedState,
  type VolumeRunRecord,
} from "./config/mod.ts";

export type { Change } from "./change.ts";
export { StoreError } from "./errors.ts";
export {
  type Ack,
  type AcmeChallenge,
  type Certificate,
  type CertificateErrorRow,
  type ClusterSetting,
  type Container,
  type Machine,
  type Member,
  type Removal,
  type RetiredMachine,
  type ServingPointer,
  type Volume,
} from "./schemas.ts";
export {
  type ApplyResult,
  type ChangedKey,
  type ChangePage,
  type CommitEvent,
  type CompactResult,
  openStore,
  type Rejection,
  Store,
  type StoreChanges,
  type StoreOptions,
  Table,
} from "./store.ts";
export type { SiteVersions, VersionVector } from "./vector.ts";
export { changeMessage, ChangeSigner, generateSigningSecret, signingPublicKey } from "./signing.ts";
export { createSyncApp, type SyncApp } from "./sync_app.ts";
export { readRemovalNotice, type RemovalNotice, removedRefusal } from "./removal_notice.ts";
export type { ErrorBody, PushResponse } from "./protocol.ts";
export { SyncAgent, type SyncEvent, type SyncResult, type SyncStats } from "./sync_agent.ts";
