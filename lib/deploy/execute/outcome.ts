/**
 * The Deploy Outcome: what completed, what failed with its evidence (or was sent and never answered), what was
 * not attempted, and the compensation done (docs/bets.md, bets 4 and 8). Nothing is rolled back except a
 * replacement that failed.
 *
 * @module
 */

import type { ContainerRef, Op } from "../plan/types.ts";

/**
 * The stages of a Deploy, in order: the context is read and sent and the image built (`build:` Services only),
 * the images copied or pulled to the Machines that lack them, then the containers deployed. A failure names its
 * stage; progress shows `build`, `distribute` and `deploy` as headings.
 */
export type DeployStage = "read context" | "send" | "build" | "distribute" | "deploy";

/** The stage an operation belongs to: a peer copy or a pull distributes an image; every other deploys. */
export function opStage(op: Pick<Op, "kind">): "distribute" | "deploy" {
  return op.kind === "image" || op.kind === "pull" ? "distribute" : "deploy";
}

/** One compensating step taken after a replacement failed. */
export interface CompensationStep {
  /** `stop_new` keeps the failed new container as evidence; `restart_old` serves the old one again. */
  action: "stop_new" | "restart_old";
  /** The container acted on. */
  container: ContainerRef;
  /** The Machine. */
  machineName: string;
  /** Whether the step succeeded. */
  ok: boolean;
  /** Why it failed, when it did. */
  error?: { code: string; message: string };
}

/** The failing operation and what was observed. */
export interface OpFailure {
  /** The operation. */
  op: Op;
  /** The error. */
  error: { code: string; message: string; details: Record<string, unknown> };
  /** What the Machine reported (health gate evidence, hook exit and logs), when anything. */
  evidence: Record<string, unknown> | null;
  /**
   * True when the request went out and no answer came back: the Machine may or may not have acted. Absent when
   * the Machine answered with the error, or the request never left.
   */
  outcomeUnknown?: boolean;
}

/** An old container a start-first replacement left running for its Machine's retire loop to stop. */
export interface RetiringContainer {
  /** The old container. */
  container: ContainerRef;
  /** Its Machine. */
  machineName: string;
  /** Its Service. */
  service: string;
  /**
   * True when this Deploy moved the Service's Serving Pointer: the retire loop stops it once every Machine not
   * Down acked, or after its bound. False when the pointer was not moved, so it keeps serving beside the new one.
   */
  pointerMoved: boolean;
}

/** A container this Deploy took out of every proxy before stopping it (docs/bets.md, bet 9). */
export interface LeftContainer {
  /** The container. */
  container: ContainerRef;
  /** Its Machine. */
  machineName: string;
  /** Machines (ids) whose proxies dropped it before the stop. */
  acked: string[];
  /** Machines not Down whose ack had not come when patience ran out: it was stopped anyway. */
  missing: string[];
  /** How long the wait took. */
  waitedMs: number;
  /** How long its Machine then drained the requests in flight to it; absent from a Machine that does not drain. */
  drainedMs?: number;
  /** Connections still open when the drain ended (its bound passed): cut by the stop. 0 when drained. */
  inFlight?: number;
  /** Why it was not left first, when it was not (a daemon without the leave route). */
  skipped?: string;
}

/** A Machine's answer to `ployz.container.leave.v1` as far as its drain goes (absent from older Machines). */
export interface LeaveDrainAnswer {
  /** How long it drained. */
  "drained_ms"?: number;
  /** Connections still open when the drain ended. */
  "in_flight"?: number;
}

/** The drain figures of a leave answer as a {@link LeftContainer} holds them; empty from a Machine that does not drain. */
export function leftDrain(answer: LeaveDrainAnswer): Pick<LeftContainer, "drainedMs" | "inFlight"> {
  return answer.drained_ms === undefined
    ? {}
    : { drainedMs: answer.drained_ms, inFlight: answer.in_flight ?? 0 };
}

/**
 * What the Machine's drain before the stop saw, as a clause to append ("; drained in 12 ms", or the connections the
 * stop cut): evidence, empty when the Machine did not drain.
 */
export function drainText(left: Pick<LeftContainer, "drainedMs" | "inFlight">): string {
  if (left.drainedMs === undefined) return "";
  if ((left.inFlight ?? 0) === 0) return `; drained in ${left.drainedMs} ms`;
  return `; stopped with ${left.inFlight} connection${
    left.inFlight === 1 ? "" : "s"
  } still open after ${left.drainedMs} ms`;
}

/** What a Deploy did. */
export interface Outcome {
  /** The Deployment. */
  deploymentId: string;
  /** The Project. */
  project: string;
  /**
   * `succeeded`: every operation completed; `partial`: some completed, then one failed (or its outcome is
   * unknown); `failed`: none completed.
   */
  status: "succeeded" | "failed" | "partial";
  /** Operations completed, in plan order. */
  completed: Op[];
  /** The first operation (in plan order) that failed or whose outcome is unknown. */
  failed?: OpFailure;
  /** Operations that were running beside it and failed too, or ended with an unknown outcome; in plan order. */
  alsoFailed?: OpFailure[];
  /** Operations never attempted. */
  notAttempted: Op[];
  /** Compensation done for a failed replacement. */
  compensation: CompensationStep[];
  /** Old containers left running for their Machine's retire loop, never stopped by this Deploy. */
  retiring: RetiringContainer[];
  /** Containers this Deploy stopped, each after leaving every proxy (or the reason it could not). */
  left?: LeftContainer[];
  /** When the Outcome was reached, ISO 8601. */
  observedAt: string;
}

/** An operation as printed and saved: everything but the container spec (which holds environment values). */
export function opView(op: Op): Record<string, unknown> {
  const { spec, ...rest } = op as Op & {
    spec?: { name: string; image: string; creationKey: string; deployment: string };
  };
  return spec === undefined ? { ...rest } : {
    ...rest,
    container: {
      name: spec.name,
      image: spec.image,
      creationKey: spec.creationKey,
      deployment: spec.deployment,
    },
  };
}

function snake(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** Converts camelCase keys to the snake_case of wire and JSON output, recursively. */
export function toWire(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toWire);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => [snake(k), toWire(v)]),
    );
  }
  return value;
}

/** The Outcome as JSON output and as the Deployment record's body: snake_case, no specs. */
export function outcomeJson(outcome: Outcome): Record<string, unknown> {
  return toWire({
    ...outcome,
    completed: outcome.completed.map(opView),
    failed: outcome.failed === undefined
      ? undefined
      : { ...outcome.failed, op: opView(outcome.failed.op), stage: opStage(outcome.failed.op) },
    alsoFailed: outcome.alsoFailed?.map((f) => ({ ...f, op: opView(f.op), stage: opStage(f.op) })),
    notAttempted: outcome.notAttempted.map(opView),
  }) as Record<string, unknown>;
}
