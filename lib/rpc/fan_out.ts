/**
 * `fanOut`: one call to many Machines, folded into a Partial Result (docs/bets.md, bet 4). Every Machine given ends in
 * exactly one list: `successes` (it answered), `failures` (it was asked and refused, failed or did not answer
 * within the deadline) or `omissions` (it was not asked, with the reason). Nothing collapses into one boolean.
 *
 * How a Machine is reached is the caller's business: each target carries its own client (the local socket, an
 * SSH bridge, or a client that forwards through the Entry Machine) or the reason it has none.
 *
 * @module
 */

import { CodedError, messageOf } from "../util/mod.ts";
import { RpcError, type RpcErrorCode } from "./errors.ts";

/** Which Machine an outcome is about. */
export interface MachineRef {
  /** Durable id. */
  id: string;
  /** Machine Name; names may collide. */
  name: string;
}

/** One Machine to ask: a client to reach it, or why it is not asked. */
export type FanOutTarget<C> = MachineRef & ({ client: C } | { omitted: string });

/** A Machine that answered. */
export interface FanOutSuccess<T> {
  /** The Machine. */
  machine: MachineRef;
  /** Its answer. */
  value: T;
}

/** A Machine that was asked and did not answer with a result. */
export interface FanOutFailure {
  /** The Machine. */
  machine: MachineRef;
  /** The error code; `unavailable` when it did not answer in time. */
  code: RpcErrorCode;
  /** Why, as the Machine (or the transport) said it. */
  message: string;
}

/** A Machine that was not asked. */
export interface FanOutOmission {
  /** The Machine. */
  machine: MachineRef;
  /** Why it was not asked. */
  reason: string;
}

/** Successes together with per-Machine failures and omissions. */
export interface PartialResult<T> {
  /** Machines that answered, in target order. */
  successes: FanOutSuccess<T>[];
  /** Machines asked that failed, in target order. */
  failures: FanOutFailure[];
  /** Machines not asked, in target order. */
  omissions: FanOutOmission[];
}

/** One Machine's outcome, told as soon as it is known. */
export type FanOutOutcome<T> =
  | ({ kind: "success" } & FanOutSuccess<T>)
  | ({ kind: "failure" } & FanOutFailure)
  | ({ kind: "omission" } & FanOutOmission);

/** Options of {@link fanOut}. */
export interface FanOutOptions<T = unknown> {
  /** How long each Machine gets to answer; default 15000 ms. The caller's patience, not a safety wait. */
  deadlineMs?: number;
  /** Cancels every call. */
  signal?: AbortSignal;
  /** Told each Machine's outcome as it arrives (omissions first), so a caller can show progress per Machine. */
  onOutcome?: (outcome: FanOutOutcome<T>) => void;
}

/** The default per-Machine deadline of {@link fanOut}. */
export const FAN_OUT_DEADLINE_MS = 15_000;

/**
 * Calls `call` on every target that has a client, at once, each bounded by the deadline even when the call ignores
 * its signal. Resolves once every Machine answered, failed or ran out of time; never rejects for one Machine.
 */
export async function fanOut<C, T>(
  targets: readonly FanOutTarget<C>[],
  call: (client: C, machine: MachineRef, signal: AbortSignal) => Promise<T>,
  options: FanOutOptions<T> = {},
): Promise<PartialResult<T>> {
  const deadlineMs = options.deadlineMs ?? FAN_OUT_DEADLINE_MS;
  const result: PartialResult<T> = { successes: [], failures: [], omissions: [] };
  // A listener that throws must not turn one Machine's answer into a failure.
  const tell = (outcome: FanOutOutcome<T>): void => {
    try {
      options.onOutcome?.(outcome);
    } catch {
      // the listener's problem, not the Machine's
    }
  };
  const outcomes = await Promise.all(targets.map(async (target) => {
    const machine = { id: target.id, name: target.name };
    if (!("client" in target)) {
      tell({ kind: "omission", machine, reason: target.omitted });
      return { kind: "omitted" as const, machine, reason: target.omitted };
    }
    const timeout = new AbortController();
    const signal = options.signal === undefined
      ? timeout.signal
      : AbortSignal.any([timeout.signal, options.signal]);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new RpcError(
          "unavailable",
          `Machine "${machine.name}" did not answer within ${deadlineMs} ms`,
        );
        timeout.abort(error);
        reject(error);
      }, deadlineMs);
    });
    try {
      const value = await Promise.race([call(target.client, machine, signal), expired]);
      tell({ kind: "success", machine, value });
      return { kind: "success" as const, machine, value };
    } catch (error) {
      const code = error instanceof CodedError ? error.code : "internal";
      tell({ kind: "failure", machine, code, message: messageOf(error) });
      return { kind: "failure" as const, machine, code, message: messageOf(error) };
    } finally {
      clearTimeout(timer);
    }
  }));
  for (const o of outcomes) {
    if (o.kind === "success") result.successes.push({ machine: o.machine, value: o.value });
    else if (o.kind === "failure") {
      result.failures.push({ machine: o.machine, code: o.code, message: o.message });
    } else result.omissions.push({ machine: o.machine, reason: o.reason });
  }
  return result;
}
