/**
 * The plan's operations, one function each, as the executor runs them on one Machine: create and start behind the
 * health gate, replace (start-first or stop-first, compensated when it fails), stop after leaving every proxy,
 * remove, hooks, the Serving Pointer move, Ingress Proxy slots, image copies and pulls.
 *
 * @module
 */

import type { RegistryAuth } from "../docker/client.ts";
import type { ContainerSpec } from "../docker/spec.ts";
import { DeployError, errorBody } from "../plan/errors.ts";
import type { MachineApi, ObservedContainerView, WaitHealthyAnswer } from "../plan/machine_api.ts";
import type {
  ContainerRef,
  HealthGate,
  HookOp,
  ImageOp,
  IngressOp,
  Op,
  PointOp,
  PullOp,
  ReplaceOp,
} from "../plan/types.ts";
import type { Phase } from "./events.ts";
import { type CompensationStep, type LeftContainer, leftDrain } from "./outcome.ts";
import { sleep } from "../../util/mod.ts";

/** Fills one Machine's Ingress Proxy slot (creates or starts, never replaces or removes); errors propagate. */
export type IngressFiller = (
  api: MachineApi,
  request: { machineId: string; deployment: string },
) => Promise<{ action: string; containerId: string; state: string }>;

/** A step failure carrying the Machine's evidence. */
export class StepFailure extends DeployError {
  constructor(
    code: DeployError["code"],
    message: string,
    readonly evidence: Record<string, unknown> | null,
    details: Record<string, unknown> = {},
  ) {
    super(code, message, details);
  }
}

/** The failure of a Machine call: `what` could not be done, for the Machine's reason, which the evidence keeps. */
function callFailure(error: unknown, what: string, evidence: Record<string, unknown>): StepFailure {
  const body = errorBody(error);
  return new StepFailure(
    body.code as DeployError["code"],
    `${what}: ${body.message}`,
    { ...evidence, error: { code: body.code, message: body.message } },
    body.details,
  );
}

/** The failure of a step this client cannot ask of the Machine: it lacks the route of `capability`. */
function unsupported(message: string, evidence: Record<string, unknown>, capability: string): StepFailure {
  return new StepFailure("unsupported", message, evidence, { capability });
}

/** What an operation runs with: its Machine, and where it reports phases, compensation and what it leaves. */
export interface Context {
  api: MachineApi;
  op: Op;
  phase(phase: Phase, detail?: string): void;
  compensate(step: CompensationStep): void;
  leave(container: ContainerRef): void;
  left(entry: LeftContainer): void;
  /** Called once the operation's new or started container passed its healthcheck, before its monitor period ends. */
  healthy?(): void;
  leavePatienceMs: number;
  hookPollMs: number;
  fillIngress?: IngressFiller;
  registryAuth?: RegistryAuthSource;
}

/** The credentials of a registry host, from the operator's side; `undefined` pulls anonymously. */
export type RegistryAuthSource = (registry: string) => Promise<RegistryAuth | undefined>;

const LIVE = new Set(["running", "restarting", "paused"]);

async function ensureRunning(ctx: Context, spec: ContainerSpec): Promise<ObservedContainerView> {
  ctx.phase("creating", spec.name);
  const { container } = await ctx.api.ensureContainer({ spec, start: true });
  if (container.state === "running") return container;
  ctx.phase("starting", container.name);
  return (await ctx.api.startContainer({ id: container.id })).container;
}

function gateFailure(container: ContainerRef, answer: WaitHealthyAnswer): StepFailure {
  return new StepFailure(
    "unavailable",
    answer.message ?? `Container "${container.name}" failed its health gate (${answer.reason ?? "unknown"})`,
    { ...answer.evidence, reason: answer.reason ?? null },
    { container: container.name, reason: answer.reason ?? null },
  );
}

/**
 * The health gate of `container`. `early` marks the gate of an operation's own new or started container: once its
 * healthcheck passes, `ctx.healthy` lets what depends on it start while the rest of the monitor period runs (a
 * restart within it still fails the operation).
 */
async function gate(
  ctx: Context,
  container: ContainerRef,
  health: HealthGate | null,
  seen?: ObservedContainerView,
  early = false,
): Promise<void> {
  if (health === null) return;
  // With no monitor period and no healthcheck, the gate asks one thing: is it running? The Machine's answer to the
  // create, observed after the start, already says; asking again would only cost a round trip.
  if (health.monitorMs === 0 && seen?.state === "running" && seen.health === "none") return;
  ctx.phase("waiting_for_health", `${container.name}: up to ${Math.round(health.deadlineMs / 1000)} s`);
  const started = Date.now();
  const ask = (monitorMs: number): Promise<WaitHealthyAnswer> =>
    ctx.api.waitHealthy({ id: container.id, "deadline_ms": health.deadlineMs, "monitor_ms": monitorMs });
  // Only a container with a healthcheck is split: without one, nothing but the monitor period says it is up.
  const split = early && ctx.healthy !== undefined && health.monitorMs > 0 && seen !== undefined &&
    seen.health !== "none";
  const answer = await ask(split ? 0 : health.monitorMs);
  if (!answer.passed) throw gateFailure(container, answer);
  if (!split) return;
  ctx.healthy!();
  const rest = health.monitorMs - (Date.now() - started);
  if (rest <= 0) return;
  const monitored = await ask(rest);
  if (!monitored.passed) throw gateFailure(container, monitored);
  // The second wait watches from its own start: a restart between the two shows as a new start or count.
  if (
    monitored.evidence.restart_count !== answer.evidence.restart_count ||
    monitored.evidence.started_at !== answer.evidence.started_at
  ) {
    throw gateFailure(container, {
      ...monitored,
      passed: false,
      reason: "restarted",
      message:
        `Container "${container.name}" restarted during the health gate (${monitored.evidence.restart_count} restarts)`,
    });
  }
}

/**
 * Takes a container out of every Machine's proxies before it stops (docs/bets.md, bet 9): its Machine marks it
 * leaving and waits, up to the patience, for every Machine not Down to ack. A container at rest has nothing to
 * leave. A Machine without the route is named in the Outcome and the stop goes ahead.
 */
async function leaveProxies(ctx: Context, container: ContainerRef): Promise<void> {
  const base = { container, machineName: ctx.op.machineName };
  if (ctx.api.leaveContainer === undefined) {
    ctx.left({ ...base, acked: [], missing: [], waitedMs: 0, skipped: "this client cannot ask it" });
    return;
  }
  ctx.phase("leaving_proxies", container.name);
  try {
    const answer = await ctx.api.leaveContainer({ id: container.id, "wait_ms": ctx.leavePatienceMs });
    if (!answer.live) return;
    ctx.left({
      ...base,
      acked: answer.acked,
      missing: answer.missing,
      waitedMs: answer.waited_ms,
      ...leftDrain(answer),
    });
  } catch (error) {
    const body = errorBody(error);
    if (body.code !== "unsupported") throw error;
    ctx.left({ ...base, acked: [], missing: [], waitedMs: 0, skipped: body.message });
  }
}

async function stopAndRemove(ctx: Context, container: ContainerRef, old = false): Promise<void> {
  await leaveProxies(ctx, container);
  ctx.phase(old ? "stopping_old" : "stopping", container.name);
  await ctx.api.stopContainer({ id: container.id });
  ctx.phase(old ? "removing_old" : "removing", container.name);
  await ctx.api.removeContainer({ id: container.id });
}

async function findByKey(ctx: Context, spec: ContainerSpec): Promise<ObservedContainerView | undefined> {
  const list = await ctx.api.listContainers({
    project: spec.project,
    service: spec.service,
    deployment: spec.deployment,
  });
  return list.containers.find((c) => c.creation_key === spec.creationKey);
}

async function compensationStep(
  ctx: Context,
  action: CompensationStep["action"],
  container: ContainerRef,
  run: () => Promise<unknown>,
): Promise<void> {
  ctx.phase("compensating", `${action === "stop_new" ? "stopping" : "restarting"} ${container.name}`);
  const step: CompensationStep = { action, container, machineName: ctx.op.machineName, ok: true };
  try {
    await run();
  } catch (error) {
    const { code, message } = errorBody(error);
    step.ok = false;
    step.error = { code, message };
  }
  ctx.compensate(step);
}

async function replace(ctx: Context, op: ReplaceOp): Promise<ContainerRef> {
  if (op.order === "stop-first") {
    await leaveProxies(ctx, op.old);
    ctx.phase("stopping_old", op.old.name);
    await ctx.api.stopContainer({ id: op.old.id });
  }
  let fresh: ContainerRef | undefined;
  try {
    const c = await ensureRunning(ctx, op.spec);
    fresh = ref(c);
    await gate(ctx, fresh, op.health, c);
  } catch (error) {
    // The replacement failed: stop the new container (kept as evidence) and serve the old one again.
    fresh ??= await findByKey(ctx, op.spec).then((c) => c && ref(c), () => undefined);
    if (fresh !== undefined && (op.order === "stop-first" || error instanceof StepFailure)) {
      const id = fresh.id;
      await compensationStep(ctx, "stop_new", fresh, () => ctx.api.stopContainer({ id }));
    }
    if (op.order === "stop-first") {
      // Serving again means passing its own healthcheck again, within the Service's gate deadline; a start alone
      // would report the old container back before it answers.
      await compensationStep(ctx, "restart_old", op.old, async () => {
        await ctx.api.startContainer({ id: op.old.id });
        await gate(ctx, op.old, op.health && { ...op.health, monitorMs: 0 });
      });
    }
    throw error;
  }
  if (op.oldStop === "retire_loop") {
    await leaveOld(ctx, op);
  } else if (op.order === "start-first") {
    await stopAndRemove(ctx, op.old, true);
  } else {
    ctx.phase("removing_old", op.old.name);
    await ctx.api.removeContainer({ id: op.old.id });
  }
  return fresh;
}

/** Leaves a live old container to its Machine's retire loop; one already stopped is removed, as it serves nothing. */
async function leaveOld(ctx: Context, op: ReplaceOp): Promise<void> {
  const list = await ctx.api.listContainers({ project: op.project, service: op.service });
  const old = list.containers.find((c) => c.id === op.old.id);
  if (old === undefined) return;
  if (LIVE.has(old.state)) {
    ctx.phase("leaving_old", `${op.old.name} for the retire loop`);
    ctx.leave(op.old);
    return;
  }
  ctx.phase("removing_old", op.old.name);
  await ctx.api.removeContainer({ id: op.old.id });
}

async function point(ctx: Context, op: PointOp): Promise<void> {
  const key = `${op.project}/${op.service}`;
  ctx.phase("setting_pointer", `${key} to Deployment ${op.deployment.slice(0, 8)}`);
  const evidence = { pointer: key, deployment: op.deployment, machine: op.machineName };
  if (ctx.api.setPointer === undefined) {
    throw unsupported(
      `Cannot move the Serving Pointer of "${key}": this client cannot ask Machine "${op.machineName}" to set it`,
      evidence,
      "ployz.serving.set_pointer.v1",
    );
  }
  try {
    await ctx.api.setPointer({ project: op.project, service: op.service, deployment: op.deployment });
  } catch (error) {
    throw callFailure(
      error,
      `Cannot move the Serving Pointer of "${key}" to Deployment "${op.deployment}"`,
      evidence,
    );
  }
}

async function image(ctx: Context, op: ImageOp): Promise<undefined> {
  ctx.phase("copying_image", `${op.ref} from ${op.fromMachineName}`);
  const evidence = { image: op.ref, from: op.fromMachineName, machine: op.machineName };
  if (ctx.api.pullImageFromPeer === undefined) {
    throw unsupported(
      `Cannot copy image "${op.ref}" to Machine "${op.machineName}": this client cannot ask it to pull from a peer`,
      evidence,
      "ployz.image.pull_from_peer.v1",
    );
  }
  try {
    const copied = await ctx.api.pullImageFromPeer({ ref: op.ref, "from_machine_id": op.fromMachineId });
    ctx.phase(
      "copying_image",
      copied.transferred
        ? `${op.ref}: ${copied.bytes} bytes in ${copied.duration_ms} ms`
        : `${op.ref}: already on "${op.machineName}"`,
    );
  } catch (error) {
    throw callFailure(
      error,
      `Cannot copy image "${op.ref}" from Machine "${op.fromMachineName}" to "${op.machineName}"`,
      evidence,
    );
  }
  return undefined;
}

/** How long one pull call waits on the Machine's task before answering with progress. */
const PULL_POLL_MS = 1_000;

function megabytes(bytes: number): string {
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}

/** Starts (or joins) the Machine's pull task and asks again until it ends, reporting its progress. */
async function pull(ctx: Context, op: PullOp): Promise<undefined> {
  ctx.phase("pulling_image", `${op.ref} from ${op.registry}`);
  const evidence = { image: op.ref, registry: op.registry, machine: op.machineName };
  if (ctx.api.pullImage === undefined) {
    throw unsupported(
      `Cannot pull image "${op.ref}" on Machine "${op.machineName}": this client cannot ask it to pull`,
      evidence,
      "ployz.image.pull.v1",
    );
  }
  const auth = await ctx.registryAuth?.(op.registry);
  let last = "";
  for (;;) {
    let answer;
    try {
      answer = await ctx.api.pullImage({
        ref: op.ref,
        ...(auth === undefined ? {} : { auth }),
        "wait_ms": PULL_POLL_MS,
      });
    } catch (error) {
      throw callFailure(error, `Cannot pull image "${op.ref}" on Machine "${op.machineName}"`, evidence);
    }
    if (answer.state === "failed") {
      const error = answer.error ?? { code: "internal", message: "the pull failed" };
      throw new StepFailure(
        error.code as DeployError["code"],
        `Cannot pull image "${op.ref}" on Machine "${op.machineName}": ${error.message}`,
        { ...evidence, error },
        { image: op.ref, registry: op.registry },
      );
    }
    const detail = answer.state === "present"
      ? `${op.ref}: already on "${op.machineName}"`
      : `${op.ref}: ${answer.layers_done}/${answer.layers} layers, ${megabytes(answer.bytes)}${
        answer.bytes_total > 0 ? ` of ${megabytes(answer.bytes_total)}` : ""
      }, ${Math.round(answer.duration_ms / 100) / 10} s`;
    if (detail !== last) ctx.phase("pulling_image", detail);
    last = detail;
    if (answer.state !== "running") return undefined;
  }
}

async function ingress(ctx: Context, op: IngressOp): Promise<ContainerRef> {
  if (ctx.fillIngress === undefined) {
    throw new DeployError(
      "internal",
      `Cannot fill the Ingress Proxy slot on Machine "${op.machineName}": no filler`,
    );
  }
  ctx.phase("filling_ingress", `${op.project}/${op.service} (${op.action})`);
  const filled = await ctx.fillIngress(ctx.api, { machineId: op.machineId, deployment: op.deployment });
  if (filled.state !== "running" && filled.state !== "restarting") {
    throw new StepFailure(
      "unavailable",
      `Ingress Proxy "${
        filled.containerId.slice(0, 12)
      }" on Machine "${op.machineName}" is ${filled.state} after its fill`,
      { ...filled },
    );
  }
  return { id: filled.containerId, name: `${op.project}/${op.service}` };
}

function ref(c: ObservedContainerView): ContainerRef {
  return { id: c.id, name: c.name };
}

/**
 * How long a failed hook's last lines may take to reach its Machine's Observe Store, which copies Docker's log
 * files every half second and finds a new container within a few seconds.
 */
const HOOK_LOGS_WITHIN_MS = 5_000;

/**
 * The last lines of a hook container, from its Machine's Observe Store. The store copies output a moment after
 * Docker writes it, so this reads until two reads agree on lines, or {@link HOOK_LOGS_WITHIN_MS} passes.
 */
async function logTail(ctx: Context, id: string): Promise<string> {
  const until = Date.now() + HOOK_LOGS_WITHIN_MS;
  let previous: string | undefined;
  try {
    for (;;) {
      const { lines } = await ctx.api.logHistory({ selector: { container: id }, since: "0", limit: 20 });
      const text = lines.map((line) => line.partial === true ? line.text : `${line.text}\n`).join("");
      if ((text !== "" && text === previous) || Date.now() >= until) {
        return text.length > 4000 ? text.slice(-4000) : text;
      }
      previous = text;
      await sleep(ctx.hookPollMs);
    }
  } catch (error) {
    return `(logs unavailable: ${errorBody(error).message})`;
  }
}

async function hook(ctx: Context, op: HookOp): Promise<ContainerRef> {
  let existing = await findByKey(ctx, op.spec);
  if (existing !== undefined && existing.state === "exited" && existing.exit_code === 0) return ref(existing);
  if (existing !== undefined && existing.state !== "running" && existing.state !== "created") {
    // Our own earlier attempt under this Deployment failed: run it again.
    ctx.phase("removing_old_hooks", existing.name);
    await ctx.api.removeContainer({ id: existing.id });
    existing = undefined;
  }
  for (const previous of op.previous.filter((p) => p.id !== existing?.id)) {
    ctx.phase("removing_old_hooks", previous.name);
    await ctx.api.removeContainer({ id: previous.id });
  }
  ctx.phase("running_hook", op.spec.name);
  const { container } = await ctx.api.ensureContainer({ spec: op.spec, start: true });
  const started = Date.now();
  let seen = container;
  while (seen.state === "running" || seen.state === "created" || seen.state === "restarting") {
    if (Date.now() - started > op.timeoutMs) {
      await ctx.api.stopContainer({ id: seen.id }).catch(() => undefined);
      throw new StepFailure(
        "unavailable",
        `Hook of Service "${op.project}/${op.service}" did not finish within ${
          Math.round(op.timeoutMs / 1000)
        } s: container "${seen.name}" stopped and kept`,
        { container: seen.name, state: seen.state, logs: await logTail(ctx, seen.id) },
        { container: seen.name },
      );
    }
    await sleep(ctx.hookPollMs);
    const again = await findByKey(ctx, op.spec);
    if (again === undefined) {
      throw new StepFailure("not_found", `Hook container "${seen.name}" disappeared while running`, null);
    }
    seen = again;
  }
  if (seen.exit_code !== 0) {
    const logs = await logTail(ctx, seen.id);
    throw new StepFailure(
      "conflict",
      `Hook of Service "${op.project}/${op.service}" exited with code ${
        seen.exit_code ?? "unknown"
      }: container "${seen.name}" kept as evidence`,
      { container: seen.name, id: seen.id, state: seen.state, "exit_code": seen.exit_code, logs },
      { container: seen.name, "exit_code": seen.exit_code },
    );
  }
  return ref(seen);
}

/** Runs one operation; returns the container it leaves in place, if any. */
export async function runOp(ctx: Context, op: Op): Promise<ContainerRef | undefined> {
  switch (op.kind) {
    case "create": {
      const seen = await ensureRunning(ctx, op.spec);
      const c = ref(seen);
      await gate(ctx, c, op.health, seen, true);
      return c;
    }
    case "replace":
      return await replace(ctx, op);
    case "start": {
      ctx.phase("starting", op.container.name);
      await ctx.api.startContainer({ id: op.container.id });
      await gate(ctx, op.container, op.health);
      return op.container;
    }
    case "stop":
      await leaveProxies(ctx, op.container);
      ctx.phase("stopping", op.container.name);
      await ctx.api.stopContainer({ id: op.container.id });
      return op.container;
    case "remove":
      await stopAndRemove(ctx, op.container);
      return op.container;
    case "hook":
      return await hook(ctx, op);
    case "point":
      await point(ctx, op);
      return undefined;
    case "ingress":
      return await ingress(ctx, op);
    case "image":
      return await image(ctx, op);
    case "pull":
      return await pull(ctx, op);
  }
}
