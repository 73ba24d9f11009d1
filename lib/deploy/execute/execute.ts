/**
 * The executor: runs a plan's operations, at most `parallel` at once ({@linkcode DEFAULT_PARALLEL} unless told) and
 * at most `perMachine` on one Machine, each only after the operations it depends on completed, or for a create
 * after an earlier Service's creates, once those passed their healthchecks (`schedule.ts`); an operation whose
 * container passed its healthcheck and only watches its monitor period no longer counts against either bound.
 * `parallel: 1` runs them strictly in plan order.
 * After the first failure nothing new starts; operations already running finish and are reported as they ended. A
 * request sent whose answer never came is reported as such (unknown outcome), never as failed or done. Every new or
 * started container passes its health gate on its Machine. Only a replacement that fails is compensated: the new
 * container is stopped and kept as evidence, and for stop-first the old one is started again. A failed hook
 * container is kept too. Nothing else is undone.
 *
 * Under a Serving Pointer, a start-first replacement leaves the old container running: once the Service's new
 * containers all passed health, the `point` operation moves the pointer, and the old container's Machine stops it
 * after every Machine not Down acked (its retire loop), so it leaves every Ingress Proxy before it stops. The
 * Outcome lists those containers as left for the retire loop, never as stopped. `ingress` operations fill
 * Ingress Proxy slots through the caller's {@linkcode IngressFiller}.
 *
 * @module
 */

import { DeployError, errorBody } from "../plan/errors.ts";
import type { MachineApi } from "../plan/machine_api.ts";
import type { ContainerRef, Op, Plan } from "../plan/types.ts";
import type { DeployEvent } from "./events.ts";
import { type Context, type IngressFiller, type RegistryAuthSource, runOp, StepFailure } from "./ops.ts";
import type { CompensationStep, LeftContainer, OpFailure, Outcome, RetiringContainer } from "./outcome.ts";
import { schedule } from "./schedule.ts";
import { traceMark } from "../../util/mod.ts";

export type { IngressFiller, RegistryAuthSource } from "./ops.ts";

/** Options of {@linkcode executePlan}. */
export interface ExecuteOptions {
  /** Receives progress, in order. */
  onEvent?: (event: DeployEvent) => void;
  /** How often a running hook is observed; default 250 ms. */
  hookPollMs?: number;
  /** Runs `ingress` operations; a plan with one fails it without. */
  fillIngress?: IngressFiller;
  /** Credentials for `pull` operations, asked once per operation and sent only with its requests. */
  registryAuth?: RegistryAuthSource;
  /** The pull tasks {@linkcode startPulls} already started for this plan: joined instead of started again. */
  pullsStarted?: Promise<void>;
  /** How many operations run at once, across Machines; default {@linkcode DEFAULT_PARALLEL}; 1 is strictly in order. */
  parallel?: number;
  /** How many operations run at once on one Machine; default {@linkcode DEFAULT_PER_MACHINE}. */
  perMachine?: number;
  /**
   * How long a stop waits for every Machine not Down to ack that the container left its proxies; default 10 s.
   * Patience, not safety: past it the container is stopped anyway and the Outcome names who did not ack.
   */
  leavePatienceMs?: number;
  /**
   * How long one call to a Machine may go unanswered, beyond the wait the call itself asks for (a health gate's
   * deadline, an image copy's timeout); default 120 s. A call past it ends as an unknown outcome.
   */
  callTimeoutMs?: number;
}

/**
 * How many operations run at once when the caller does not say. The bound per Machine
 * ({@linkcode DEFAULT_PER_MACHINE}) keeps one Machine from being swamped; this one caps the whole Deploy, so
 * the operator's side has a dozen requests in flight at most: four Machines each running their three, or more
 * Machines fewer each.
 */
export const DEFAULT_PARALLEL = 12;

/**
 * How many operations run at once on one Machine when the caller does not say. Measured on a 3-Machine lab
 * (3 Services x 3 replicas, one of each per Machine, health-gated): 3 took 0.87x the time of 2 (10.8 s
 * against 12.4 s); on one Machine creating 9, 2, 4 and 8 took the same time: the host's CPU bounds starts.
 */
export const DEFAULT_PER_MACHINE = 3;

/** Image copies without their own timeout get this long. */
const IMAGE_COPY_MS = 30 * 60_000;
/** A stop waits for the container's own stop grace period, which a Compose file may set to minutes. */
const STOP_MS = 15 * 60_000;

/**
 * `api` with every call bounded in time: a Machine cut off after it took a request never answers, and the Deploy
 * must end anyway. The call's own wait (health gate deadline, image copy timeout) is added to `callMs`.
 */
function bounded(api: MachineApi, callMs: number): MachineApi {
  return new Proxy(api, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== "function") return value;
      return async (request: Record<string, unknown>): Promise<unknown> => {
        const own = key === "waitHealthy"
          ? Number(request["deadline_ms"] ?? 0)
          : key === "pullImageFromPeer"
          ? Number(request["timeout_ms"] ?? IMAGE_COPY_MS)
          : key === "stopContainer"
          ? STOP_MS
          : key === "leaveContainer"
          ? Number(request["wait_ms"] ?? 0)
          : 0;
        const abort = new AbortController();
        const timer = setTimeout(
          () => abort.abort(new DOMException(`no answer within ${own + callMs} ms`, "TimeoutError")),
          own + callMs,
        );
        try {
          return await value.call(target, request, { signal: abort.signal });
        } finally {
          clearTimeout(timer);
        }
      };
    },
  });
}

/**
 * Whether a failed call may have acted anyway: the request went out and no answer came back (the connection
 * dropped or the deadline passed after sending). A refused connection or an answer with an error is a failure.
 */
function outcomeUnknown(error: unknown): boolean {
  if (error instanceof StepFailure) return false;
  if (error instanceof DOMException) return error.name === "TimeoutError" || error.name === "AbortError";
  const { code, details } = errorBody(error);
  return code === "unavailable" && details["no_answer"] === true;
}

/**
 * Starts every pull task of `plan` on its Machine at once, whatever order the plan runs in: each pull operation later
 * joins its Machine's task (a pull changes no container, so starting it early changes nothing the plan orders).
 * Resolves once every Machine took its requests; never rejects (a pull operation reports its own failure).
 */
export async function startPulls(
  plan: Plan,
  machines: ReadonlyMap<string, MachineApi>,
  options: Pick<ExecuteOptions, "registryAuth" | "callTimeoutMs"> = {},
): Promise<void> {
  await Promise.allSettled(plan.ops.map(async (op) => {
    const api = machines.get(op.machineId);
    if (op.kind !== "pull" || api?.pullImage === undefined) return;
    const auth = await options.registryAuth?.(op.registry);
    await bounded(api, options.callTimeoutMs ?? 120_000).pullImage!({
      ref: op.ref,
      ...(auth === undefined ? {} : { auth }),
      "wait_ms": 0,
    });
  }));
}

/** Runs `plan` against the Machines by id, and reports the Outcome. Never throws for a failed step. */
export async function executePlan(
  plan: Plan,
  machines: ReadonlyMap<string, MachineApi>,
  options: ExecuteOptions = {},
): Promise<Outcome> {
  const emit = options.onEvent ?? (() => {});
  emit({ type: "plan", deploymentId: plan.deploymentId, ops: plan.ops });
  const parallel = Math.max(1, Math.floor(options.parallel ?? DEFAULT_PARALLEL));
  const perMachine = Math.max(1, Math.floor(options.perMachine ?? DEFAULT_PER_MACHINE));
  const waitsFor = schedule(
    plan.ops,
    plan.dependsOn === undefined ? undefined : { project: plan.project, dependsOn: plan.dependsOn },
  );
  // `healthy`: running on, its container past its healthcheck and in its monitor period.
  const state = plan.ops.map((): "pending" | "running" | "healthy" | "done" | "failed" => "pending");
  const completed: Op[] = [];
  const compensation: CompensationStep[] = [];
  const left: { op: Op; container: ContainerRef }[] = [];
  const leftProxies: LeftContainer[] = [];
  const failures: OpFailure[] = [];
  const running = new Map<number, Promise<void>>();
  // When each operation ended, for a replacement's `update_config.delay` after the one it rolls after.
  const endedAt = new Map<number, number>();
  let wake = (): void => {};
  const prefetched = options.pullsStarted ?? startPulls(plan, machines, options);

  async function run(op: Op): Promise<void> {
    const found = machines.get(op.machineId);
    const api = found === undefined ? undefined : bounded(found, options.callTimeoutMs ?? 120_000);
    const ctx: Context = {
      api: api!,
      op,
      phase: (phase, detail) => emit({ type: "step", index: op.index, status: "running", phase, detail }),
      // One at a time nothing could start beside it: the gate stays one wait.
      healthy: parallel === 1 ? undefined : () => {
        if (state[op.index] === "running") state[op.index] = "healthy";
        wake();
      },
      compensate: (step) => {
        compensation.push(step);
        emit({ type: "compensation", index: op.index, step });
      },
      leave: (container) => left.push({ op, container }),
      left: (entry) => leftProxies.push(entry),
      leavePatienceMs: options.leavePatienceMs ?? 10_000,
      hookPollMs: options.hookPollMs ?? 250,
      fillIngress: options.fillIngress,
      registryAuth: options.registryAuth,
    };
    try {
      if (api === undefined) {
        throw new DeployError("unavailable", `Machine "${op.machineName}" is not connected`, {
          machine: op.machineName,
        });
      }
      traceMark(`deploy: operation ${op.index} (${op.kind} on ${op.machineName}) started`);
      const container = await runOp(ctx, op);
      traceMark(`deploy: operation ${op.index} (${op.kind} on ${op.machineName}) done`);
      state[op.index] = "done";
      endedAt.set(op.index, Date.now());
      completed.push(op);
      emit({ type: "step", index: op.index, status: "completed", container });
    } catch (error) {
      const body = error instanceof DOMException && error.name === "TimeoutError"
        ? {
          code: "unavailable",
          message: `Machine "${op.machineName}" took the request and sent no answer: ${error.message}`,
          details: { machine: op.machineName },
        }
        : errorBody(error);
      const unknown = outcomeUnknown(error);
      state[op.index] = "failed";
      failures.push({
        op,
        error: body,
        evidence: error instanceof StepFailure ? error.evidence : null,
        ...(unknown ? { outcomeUnknown: true } : {}),
      });
      emit({
        type: "step",
        index: op.index,
        status: "failed",
        error: { code: body.code, message: body.message },
        ...(unknown ? { outcomeUnknown: true } : {}),
      });
    }
  }

  for (;;) {
    // Start what may start, in plan order; after a failure nothing new starts.
    // The bounds count operations at work: one past its healthcheck only watches its monitor period.
    const working = plan.ops.filter((op) => state[op.index] === "running");
    // The earliest moment a replacement held back by its delay may start.
    let delayedUntil = Number.POSITIVE_INFINITY;
    for (const op of failures.length > 0 ? [] : plan.ops) {
      if (working.length >= parallel) break;
      if (state[op.index] !== "pending") continue;
      if (working.filter((w) => w.machineId === op.machineId).length >= perMachine) continue;
      const waits = waitsFor[op.index];
      if (!waits.done.every((j) => state[j] === "done")) continue;
      if (!waits.healthy.every((j) => state[j] === "done" || state[j] === "healthy")) continue;
      if (op.kind === "replace" && op.delayMs !== undefined && waits.rollsAfter !== undefined) {
        const from = endedAt.get(waits.rollsAfter)! + op.delayMs;
        if (Date.now() < from) {
          delayedUntil = Math.min(delayedUntil, from);
          // One at a time runs in plan order: nothing after it starts while it waits.
          if (parallel === 1) break;
          continue;
        }
      }
      state[op.index] = "running";
      working.push(op);
      running.set(op.index, run(op).finally(() => running.delete(op.index)));
    }
    if (running.size === 0 && delayedUntil === Number.POSITIVE_INFINITY) break;
    // An operation passing its healthcheck may let others start before it ends; a delay may end first.
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      ...running.values(),
      new Promise<void>((resolve) => {
        wake = resolve;
        if (delayedUntil !== Number.POSITIVE_INFINITY) {
          timer = setTimeout(resolve, Math.max(0, delayedUntil - Date.now()));
        }
      }),
    ]);
    clearTimeout(timer);
  }
  await prefetched;
  completed.sort((a, b) => a.index - b.index);
  failures.sort((a, b) => a.op.index - b.op.index);
  const notAttempted = plan.ops.filter((op) => state[op.index] === "pending");
  const moved = new Set(
    completed.filter((op) => op.kind === "point").map((op) => `${op.project}/${op.service}`),
  );
  const retiring: RetiringContainer[] = left.map(({ op, container }) => ({
    container,
    machineName: op.machineName,
    service: op.service,
    pointerMoved: moved.has(`${op.project}/${op.service}`),
  }));
  const outcome: Outcome = {
    deploymentId: plan.deploymentId,
    project: plan.project,
    status: failures.length === 0 ? "succeeded" : completed.length > 0 ? "partial" : "failed",
    completed,
    failed: failures[0],
    ...(failures.length > 1 ? { alsoFailed: failures.slice(1) } : {}),
    notAttempted,
    compensation,
    retiring,
    ...(leftProxies.length > 0 ? { left: leftProxies } : {}),
    observedAt: new Date().toISOString(),
  };
  emit({ type: "outcome", outcome });
  return outcome;
}
