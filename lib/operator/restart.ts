// `ployz restart`: every slot of a Service, one at a time, each taken out of every proxy, stopped, started and put
// through the Machine's
// health gate before the next is touched. The Serving Pointer is never moved (the same containers keep serving the
// same Deployment); the first slot that does not come back healthy stops the run, and the Outcome names what was
// restarted, what failed and what was never attempted (docs/bets.md, bet 4: no rollback).
import type { MachineClient } from "../rpc/mod.ts";
import { leftDrain } from "../deploy/mod.ts";
import { CodedError, messageOf } from "../util/mod.ts";

/**
 * The slice of Machine RPC a restart needs: stop, start and the health gate; `leaveContainer` (out of every proxy
 * first, bounded wait for the acks) is absent on older clients.
 */
export type RestartApi =
  & Pick<MachineClient, "stopContainer" | "startContainer" | "waitHealthy">
  & Partial<Pick<MachineClient, "leaveContainer">>;

/** One slot to restart. */
export interface RestartSlot {
  /** The Machine it runs on. */
  machine: { id: string; name: string };
  /** The container. */
  container: { id: string; name: string; slot: string };
  /** That Machine's client. */
  api: RestartApi;
}

/** What happened to one slot. */
export interface RestartStep {
  /** The slot. */
  slot: Omit<RestartSlot, "api">;
  /** `restarted` (healthy again), `failed`, or `not_attempted` after an earlier failure. */
  status: "restarted" | "failed" | "not_attempted";
  /** How the health gate passed. */
  via?: string;
  /** Why it failed. */
  error?: { code: string; message: string };
  /** Milliseconds the slot took. */
  elapsedMs?: number;
  /** True when a receipt under the same request key already said this slot was restarted: nothing was sent. */
  earlier?: boolean;
  /**
   * How the container left every proxy before its stop: Machines that acked, those missing, the wait, and how long
   * its Machine then drained the connections in flight and how many were still open (absent from older Machines).
   */
  left?:
    | { acked: number; missing: string[]; waitedMs: number; drainedMs?: number; inFlight?: number }
    | { skipped: string };
}

/** A slot's receipt: `sent` until its outcome is known. */
export interface RestartReceipt {
  /** Where the slot's restart stands. */
  status: "sent" | "succeeded" | "failed";
  /** How the health gate passed. */
  via?: string;
  /** Why it failed, `code: message`. */
  error?: string;
}

/** The receipt leg of a slot: the container and its Machine. */
export function restartLeg(slot: Omit<RestartSlot, "api">): string {
  return `restart ${slot.container.name}@${slot.machine.name}`;
}

/** Options of {@link restartSlots}. */
export interface RestartOptions {
  /** How long each slot may take to pass the health gate. */
  deadlineMs: number;
  /** How long a slot without a healthcheck must stay up. */
  monitorMs: number;
  /** How long a stop waits for every Machine not Down to ack that the container left its proxies; default 10 s. */
  leavePatienceMs?: number;
  /**
   * Where a receipt per slot is kept under the command's request key: a slot whose receipt says `succeeded` is not
   * touched again; any other is restarted again, which ends in the same state (running, health-gated).
   */
  receipts?: {
    load(leg: string): RestartReceipt | undefined;
    save(leg: string, receipt: RestartReceipt): void;
  };
  /** Told as each slot starts (`running`) and ends. */
  onStep?(step: RestartStep | { slot: Omit<RestartSlot, "api">; status: "running" }): void;
}

/** Orders slots by slot number, then Machine name, so a run is repeatable. */
export function restartOrder(slots: RestartSlot[]): RestartSlot[] {
  return [...slots].sort((a, b) =>
    a.container.slot.padStart(4).localeCompare(b.container.slot.padStart(4)) ||
    a.machine.name.localeCompare(b.machine.name)
  );
}

function errorOf(error: unknown): { code: string; message: string } {
  if (error instanceof CodedError) return { code: error.code, message: error.message };
  return { code: "internal", message: messageOf(error) };
}

async function leaveFirst(api: RestartApi, id: string, patienceMs: number): Promise<RestartStep["left"]> {
  if (api.leaveContainer === undefined) return { skipped: "this client cannot ask it" };
  try {
    const answer = await api.leaveContainer({ id, "wait_ms": patienceMs });
    if (!answer.live) return undefined;
    return {
      acked: answer.acked.length,
      missing: answer.missing,
      waitedMs: answer.waited_ms,
      ...leftDrain(answer),
    };
  } catch (error) {
    if (error instanceof CodedError && error.code === "unsupported") return { skipped: error.message };
    throw error;
  }
}

/** Restarts `slots` in order, one at a time; stops at the first that fails. */
export async function restartSlots(slots: RestartSlot[], options: RestartOptions): Promise<RestartStep[]> {
  const steps: RestartStep[] = [];
  let failed = false;
  for (const { api, ...slot } of slots) {
    if (failed) {
      steps.push({ slot, status: "not_attempted" });
      continue;
    }
    const leg = restartLeg(slot);
    const prior = options.receipts?.load(leg);
    if (prior?.status === "succeeded") {
      const step: RestartStep = {
        slot,
        status: "restarted",
        earlier: true,
        ...(prior.via ? { via: prior.via } : {}),
      };
      steps.push(step);
      options.onStep?.(step);
      continue;
    }
    options.onStep?.({ slot, status: "running" });
    options.receipts?.save(leg, { status: "sent" });
    const started = performance.now();
    let step: RestartStep;
    let left: RestartStep["left"];
    try {
      // Proxy first (docs/bets.md, bet 9): out of every Machine's ingress and DNS before the stop.
      left = await leaveFirst(api, slot.container.id, options.leavePatienceMs ?? 10_000);
      await api.stopContainer({ id: slot.container.id });
      await api.startContainer({ id: slot.container.id });
      const health = await api.waitHealthy({
        id: slot.container.id,
        "deadline_ms": options.deadlineMs,
        "monitor_ms": options.monitorMs,
      });
      step = health.passed ? { slot, status: "restarted", via: health.via } : {
        slot,
        status: "failed",
        error: {
          code: "unavailable",
          message: health.message ??
            `Container "${slot.container.name}" did not pass its health gate (${health.reason ?? "unknown"})`,
        },
      };
    } catch (error) {
      step = { slot, status: "failed", error: errorOf(error) };
    }
    step.elapsedMs = Math.round(performance.now() - started);
    if (left !== undefined) step.left = left;
    failed = step.status === "failed";
    options.receipts?.save(
      leg,
      step.status === "restarted"
        ? { status: "succeeded", ...(step.via ? { via: step.via } : {}) }
        : { status: "failed", error: `${step.error?.code}: ${step.error?.message}` },
    );
    steps.push(step);
    options.onStep?.(step);
  }
  return steps;
}
