/**
 * One Machine's observation of one peer: unknown, up, suspect or down, judged only from evidence this Machine holds
 * (its WireGuard handshakes and the store traffic it received from that peer). Each peer is judged on its own; no
 * quorum, no vote, no other Machine's opinion.
 *
 * Thresholds (defaults) and why:
 * - WireGuard rekeys every 120 s while packets flow, and with a 25 s persistent keepalive they always flow to a live
 *   peer; a session's keys are rejected 180 s after its handshake. So a handshake younger than 185 s
 *   (REJECT_AFTER_TIME + REKEY_TIMEOUT) means a working session now: **up**.
 * - Store traffic (sync, gossip) received within 30 s also proves the peer is **up**.
 * - Past that, until 275 s (180 s, plus 5, plus 90 s of rekey attempts): **suspect**.
 * - Beyond 275 s with no evidence: **down**.
 * - No handshake and no store traffic ever seen: **unknown**; absence of evidence is not evidence of absence.
 *
 * @module
 */

/** One Machine's judgement of a peer. */
export type MembershipState = "unknown" | "up" | "suspect" | "down";

/** How fresh evidence must be; milliseconds. */
export interface MembershipThresholds {
  /** A handshake younger than this means up; default 185 000. */
  handshakeUpMs: number;
  /** Store traffic younger than this means up; default 30 000. */
  storeUpMs: number;
  /** Evidence older than this (all of it) means down; default 275 000. */
  downAfterMs: number;
}

/** The default thresholds; see the module comment for their reasons. */
export const DEFAULT_MEMBERSHIP_THRESHOLDS: Readonly<MembershipThresholds> = Object.freeze({
  handshakeUpMs: 185_000,
  storeUpMs: 30_000,
  downAfterMs: 275_000,
});

/** The evidence about one peer; times are milliseconds since the epoch. */
export interface MembershipEvidence {
  /** Now, on the observer's clock. */
  now: number;
  /** The latest WireGuard handshake with the peer, if any. */
  latestHandshake?: number;
  /** When store traffic from the peer last arrived, if ever. */
  lastStoreTraffic?: number;
}

/** Judges one peer from the observer's own evidence. */
export function observeMembership(
  evidence: MembershipEvidence,
  thresholds: MembershipThresholds = DEFAULT_MEMBERSHIP_THRESHOLDS,
): MembershipState {
  const { now, latestHandshake, lastStoreTraffic } = evidence;
  if (latestHandshake === undefined && lastStoreTraffic === undefined) return "unknown";
  const handshakeAge = latestHandshake === undefined ? Infinity : Math.max(0, now - latestHandshake);
  const storeAge = lastStoreTraffic === undefined ? Infinity : Math.max(0, now - lastStoreTraffic);
  if (handshakeAge < thresholds.handshakeUpMs || storeAge < thresholds.storeUpMs) return "up";
  if (Math.min(handshakeAge, storeAge) < thresholds.downAfterMs) return "suspect";
  return "down";
}
