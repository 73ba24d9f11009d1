// SetVolumeCopy's transition table (docs/bets.md, "Expected copies", "One lease, one fence"): pure, so the daemon
// applies it against its own copy and floor, and a property test drives it with every ordering of late requests.
// A Machine compares the request's expected copy with its own; a match takes the one allowed transition, a copy
// already at the want answers success, anything else is refused, and a gen below the Volume's floor is refused
// before anything else. The Machine never checks a Writer's epoch and never reads another Machine's copy.
import { checkSnapshotName } from "./names.ts";

/** A Machine's copy of one Volume. */
export type Copy =
  | { role: "none" }
  | { role: "mirror"; snapshot: string }
  | { role: "writer"; epoch: number };

/** A SetVolumeCopy request, as the table sees it. */
export interface CopyRequest {
  /** The copy the operator last saw on this Machine. */
  expected: Copy;
  /** The copy it wants there. */
  wanted: Copy;
  /** The open run's number. */
  gen: number;
}

/** The work one accepted transition does on this Machine. */
export type CopyStep =
  /** none → Mirror@G (full, no base) or Mirror@B → Mirror@G (incremental from B): receive G from the Writer. */
  | { kind: "receive"; snapshot: string; base: string | undefined }
  /** Writer → Mirror@G: stop the Container (and keep it), take the final Snapshot G, drop the writable copy. */
  | { kind: "cut"; snapshot: string }
  /** Mirror@G → Writer: make G writable (and start the Container when asked); the new Writer's epoch. */
  | { kind: "promote"; snapshot: string; epoch: number }
  /** Writer → none (Release) or Mirror → none (Delete Mirror). */
  | { kind: "destroy" };

/** Why a request was refused. */
export type RefusalReason = "below_floor" | "stale_expected" | "no_transition";

/** What the table says to do with a request. */
export type CopyDecision =
  | { kind: "at_want" }
  | { kind: "step"; step: CopyStep }
  | { kind: "refused"; reason: RefusalReason; message: string };

/** Whether two copies are the same for the table: role and Snapshot; a Writer's epoch is reported, never checked. */
export function sameCopy(a: Copy, b: Copy): boolean {
  if (a.role !== b.role) return false;
  return a.role !== "mirror" || a.snapshot === (b as { snapshot: string }).snapshot;
}

/** The copy in words, for messages and `volume ls`: `none`, `Mirror@G`, `Writer(epoch 3)`. */
export function describeCopy(copy: Copy): string {
  switch (copy.role) {
    case "none":
      return "none";
    case "mirror":
      return `Mirror@${copy.snapshot}`;
    case "writer":
      return `Writer(epoch ${copy.epoch})`;
  }
}

/** Checks a copy arriving over the wire; returns a message when it is not one. */
export function copyProblem(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null) return "a copy is an object with a role";
  const copy = value as Record<string, unknown>;
  switch (copy.role) {
    case "none":
      return undefined;
    case "mirror":
      try {
        checkSnapshotName(copy.snapshot as string);
        return undefined;
      } catch (error) {
        return (error as Error).message;
      }
    case "writer":
      return Number.isSafeInteger(copy.epoch) && (copy.epoch as number) >= 0
        ? undefined
        : "a Writer copy has a whole epoch >= 0";
    default:
      return `unknown copy role "${String(copy.role).slice(0, 20)}": expected none, mirror or writer`;
  }
}

/**
 * Decides a request against this Machine's `current` copy and its `floor` for the Volume (the newest gen it
 * accepted; 0 before any).
 */
export function decideCopy(current: Copy, floor: number, request: CopyRequest): CopyDecision {
  const { expected, wanted, gen } = request;
  if (gen < floor) {
    return {
      kind: "refused",
      reason: "below_floor",
      message: `gen ${gen} is below this Volume's floor ${floor}: a newer run has taken over`,
    };
  }
  if (sameCopy(current, wanted)) return { kind: "at_want" };
  if (!sameCopy(current, expected)) {
    return {
      kind: "refused",
      reason: "stale_expected",
      message: `expected ${describeCopy(expected)} but the copy is ${describeCopy(current)}`,
    };
  }
  const step = transition(current, wanted, gen);
  if (step === undefined) {
    return {
      kind: "refused",
      reason: "no_transition",
      message: `no transition from ${describeCopy(current)} to ${describeCopy(wanted)}`,
    };
  }
  return { kind: "step", step };
}

function transition(current: Copy, wanted: Copy, gen: number): CopyStep | undefined {
  if (wanted.role === "none") return current.role === "none" ? undefined : { kind: "destroy" };
  if (wanted.role === "mirror") {
    if (current.role === "none") return { kind: "receive", snapshot: wanted.snapshot, base: undefined };
    if (current.role === "mirror") {
      return { kind: "receive", snapshot: wanted.snapshot, base: current.snapshot };
    }
    return { kind: "cut", snapshot: wanted.snapshot };
  }
  if (current.role === "mirror") return { kind: "promote", snapshot: current.snapshot, epoch: gen };
  return undefined;
}

/** The copy once `step` succeeded. */
export function copyAfter(step: CopyStep): Copy {
  switch (step.kind) {
    case "receive":
    case "cut":
      return { role: "mirror", snapshot: step.snapshot };
    case "promote":
      return { role: "writer", epoch: step.epoch };
    case "destroy":
      return { role: "none" };
  }
}

/** The floor after a decision: an accepted request (a step or already at the want) raises it to its gen. */
export function floorAfter(floor: number, gen: number, decision: CopyDecision): number {
  return decision.kind === "refused" ? floor : Math.max(floor, gen);
}
