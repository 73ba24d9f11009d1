/**
 * Confirming an ACME HTTP-01 answer on every Machine before the CA is asked to validate it. DNS for a public name may
 * send the CA to any Machine, so the asking Machine waits until each Machine not Down whose Ingress Proxy runs or is
 * starting, or that accepts ingress and has no proxy yet (the next Deploy's fill creates it), confirms that its proxy
 * loaded the answer: a challenge ack, the Machine's own `acks` row keyed
 * `acme:<token>`, written by its serving loop once a Caddy config answering that token is confirmed loaded, and
 * deleted once the answer is withdrawn. The wait is bounded: past it the CA is asked anyway when at least one
 * Machine confirmed (a cut-off Machine is not Down for minutes, and the CA may well be sent to one that answers),
 * and the Machines that did not confirm are named in the log and in any failure. Pure.
 *
 * @module
 */

import type { Ack, Container, Machine } from "../store/mod.ts";
import { INGRESS_PROJECT, INGRESS_SERVICE } from "./ingress_spec.ts";

/** The prefix of a challenge ack's pointer; never the key of a Serving Pointer, a removal or a leave ack. */
export const CHALLENGE_ACK_PREFIX = "acme:";
/**
 * Default bound on the wait for every Machine to confirm an answer. A proxy the Deploy's fill has just created may
 * take over 10 s to start and load on a busy Machine (seen in the lab); past the bound only a cut-off Machine waits.
 */
export const DEFAULT_CONFIRM_MS = 30_000;

const AWAITED = new Set(["running", "restarting", "created"]);

/** The ack pointer that says a Machine's Ingress Proxy answers `token`. */
export function challengeAckPointer(token: string): string {
  return `${CHALLENGE_ACK_PREFIX}${token}`;
}

/** The challenge acks this Machine should write: one per token its confirmed-loaded Caddy config answers. */
export function challengeAcksToWrite(
  machineId: string,
  answered: readonly string[],
  current: readonly Ack[],
  now: Date,
): Ack[] {
  const have = new Set(current.filter((a) => a.machine_id === machineId).map((a) => a.pointer));
  return answered.filter((token) => !have.has(challengeAckPointer(token))).map((token) => ({
    "machine_id": machineId,
    pointer: challengeAckPointer(token),
    // The field names what is acknowledged; a token is at most 256 characters, an ack's id field 128.
    deployment: token.slice(0, 128),
    "acked_at": now.toISOString(),
  }));
}

/** Keys of this Machine's challenge acks for tokens its proxy no longer answers: deleted so acks do not pile up. */
export function staleChallengeAcks(
  machineId: string,
  answered: readonly string[],
  current: readonly Ack[],
): string[] {
  const live = new Set(answered.map(challengeAckPointer));
  return current.filter((a) =>
    a.machine_id === machineId && a.pointer.startsWith(CHALLENGE_ACK_PREFIX) && !live.has(a.pointer)
  ).map((a) => `${a.machine_id}/${a.pointer}`);
}

/** Which Machines serve an answer now, by name. */
export interface ChallengeConfirmation {
  /** Machines not Down whose Ingress Proxy confirmed loading the answer. */
  confirmed: string[];
  /**
   * Machines not Down that did not confirm it (yet): their Ingress Proxy runs or is starting, or none was created
   * yet on a participating Machine that accepts ingress.
   */
  missing: string[];
}

/** What {@link challengeConfirmation} reads. */
export interface ConfirmationInput {
  /** The challenge token. */
  token: string;
  /** The Cluster's live Machines; `phase` and `accepts_ingress` as their own rows say. */
  machines: readonly (Pick<Machine, "id" | "name" | "phase"> & { "accepts_ingress"?: unknown })[];
  /** Machines observed Down: not waited for. */
  down: ReadonlySet<string>;
  /** Container rows: a Machine is waited for when its Ingress Proxy runs or is starting. */
  containers: readonly Container[];
  /** Ack rows (any; only this token's challenge acks count). */
  acks: readonly Ack[];
}

/**
 * Which Machines confirmed `token` and which are still awaited. Only a Machine with an Ingress Proxy can answer on
 * port 80: those whose proxy runs or is starting are awaited (it acks once it loaded the answer), and so is a
 * participating Machine that accepts ingress (its row says so; absent means yes) but has no proxy yet, as a Deploy
 * running now is filling its slot. A Machine whose proxy was stopped, or that refuses ingress, is not.
 */
export function challengeConfirmation(input: ConfirmationInput): ChallengeConfirmation {
  const pointer = challengeAckPointer(input.token);
  const acked = new Set(input.acks.filter((a) => a.pointer === pointer).map((a) => a.machine_id));
  const proxies = new Set(
    input.containers.filter((r) =>
      r.project === INGRESS_PROJECT && r.service === INGRESS_SERVICE && AWAITED.has(r.state ?? "")
    ).map((r) => r.machine_id),
  );
  const slots = new Set(
    input.containers.filter((r) => r.project === INGRESS_PROJECT && r.service === INGRESS_SERVICE)
      .map((r) => r.machine_id),
  );
  const confirmed: string[] = [];
  const missing: string[] = [];
  const sorted = [...input.machines].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const m of sorted) {
    if (input.down.has(m.id)) continue;
    if (acked.has(m.id)) confirmed.push(m.name);
    else if (proxies.has(m.id)) missing.push(m.name);
    else if (
      !slots.has(m.id) && m.accepts_ingress !== false &&
      (m.phase === undefined || m.phase === "participating")
    ) missing.push(m.name);
  }
  return { confirmed, missing };
}

/** The next step of the wait: keep waiting, ask the CA to validate, or give up before asking it. */
export type ConfirmStep =
  | { kind: "wait" }
  | { kind: "validate"; confirmed: string[]; missing: string[] }
  | { kind: "fail"; message: string };

/**
 * Validate once every awaited Machine confirmed; past `boundMs`, validate if at least one confirmed (naming the
 * others), else give up with a message naming the stage and the Machines.
 */
export function confirmStep(
  hostname: string,
  confirmation: ChallengeConfirmation,
  elapsedMs: number,
  boundMs: number,
): ConfirmStep {
  const { confirmed, missing } = confirmation;
  if (confirmed.length > 0 && missing.length === 0) return { kind: "validate", confirmed, missing };
  if (elapsedMs < boundMs) return { kind: "wait" };
  if (confirmed.length > 0) return { kind: "validate", confirmed, missing };
  const awaited = missing.length > 0 ? `awaited ${missing.join(", ")}` : "no Machine not Down runs one";
  return {
    kind: "fail",
    message: `challenge stage: no Ingress Proxy confirmed serving the answer for "${hostname}" within ${
      boundMs / 1000
    } s (${awaited}); the CA was not asked to validate`,
  };
}
