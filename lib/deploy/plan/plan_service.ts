/**
 * One Service's share of the plan: what each of its desired slots (slots.ts) needs (create, keep, replace,
 * start), its removals, its hook and its Serving Pointer move; and a Service others wait to complete, run once
 * to exit 0.
 *
 * @module
 */

import { compareServiceSpecs } from "../compose/spec.ts";
import { formatDurationMs } from "../compose/units.ts";
import type { NormalizedService, VolumeMount } from "../compose/types.ts";
import type { PlanOptions } from "./plan.ts";
import { type ContainerSpec, specDigest } from "../docker/spec.ts";
import { hookContainerSpec, serviceContainerSpec, unsupportedFields } from "./container_spec.ts";
import { DEFAULT_MONITOR_MS, healthGate, healthWaitMs } from "./health.ts";
import type { ObservedContainerView } from "./machine_api.ts";
import type { MachineObservation } from "./snapshot.ts";
import type { HealthGate, ReplaceOp, ServiceSummary } from "./types.ts";
import type { Draft } from "./draft.ts";
import { pointOf } from "./serving_ops.ts";
import { type VolumePlacement, volumePlacement } from "./volume_locality.ts";
import { byPreference, desiredSlots, eligibleMachines, placeable, type Placed } from "./slots.ts";

/** The default timeout of a pre-deploy hook. */
export const DEFAULT_HOOK_TIMEOUT_MS = 300_000;

const NOT_RUNNING = new Set(["created", "exited", "dead"]);

/** The container as an operation names it. */
export function ref(c: ObservedContainerView): { id: string; name: string } {
  return { id: c.id, name: c.name };
}

function adopt(spec: ContainerSpec, c: ObservedContainerView): ContainerSpec {
  // Reuse the existing container's identity, so the ensure finds it instead of creating a sibling.
  return { ...spec, name: c.name, creationKey: c.creation_key, deployment: c.deployment };
}

function updateOrder(service: NormalizedService): { order: "start-first" | "stop-first"; reason: string } {
  if (service.update.order !== null) return { order: service.update.order, reason: "update_config.order" };
  const host = service.ports.find((p) => p.kind === "host");
  if (host !== undefined && host.kind === "host") {
    return { order: "stop-first", reason: `publishes host port ${host.publishedPort}` };
  }
  const volume = service.mounts.find((m): m is VolumeMount => m.type === "volume" && m.source !== "");
  if (volume !== undefined) return { order: "stop-first", reason: `mounts named volume "${volume.source}"` };
  return { order: "start-first", reason: "default" };
}

/** The Docker network a container on `machine` joins: what its record names, else the plan's default. */
function networkOf(options: PlanOptions, machine: { network?: string } | undefined): string | undefined {
  return machine?.network ?? options.network;
}

function changeOf(
  options: PlanOptions,
  service: NormalizedService,
  old: ObservedContainerView,
  machine: MachineObservation,
): Pick<ReplaceOp, "change" | "changed"> {
  const previous = options.previous?.services[service.name];
  if (previous !== undefined && options.previous !== undefined) {
    const before = serviceContainerSpec(options.previous, previous, {
      deploymentId: "x",
      slot: "1",
      network: networkOf(options, machine),
    });
    // The Saved State explains the change only if the old container was built from it.
    if (specDigest(before) === old.spec_digest) {
      const cmp = compareServiceSpecs(previous, service, {
        current: options.previous,
        requested: options.intent.project,
      });
      const changed = [...cmp.recreate, ...cmp.update];
      return { change: "NeedsRecreate", changed: changed.length > 0 ? changed : ["container spec"] };
    }
  }
  return { change: "NeedsRecreate", changed: [] };
}

/** Where an operation of one slot of a Service acts: the Machine, the Project, the Service and the slot. */
function slotOn(
  m: MachineObservation,
  project: string,
  service: string,
  slot: string,
): { machineId: string; machineName: string; project: string; service: string; slot: string } {
  return { machineId: m.machineId, machineName: m.machineName, project, service, slot };
}

/**
 * Removals of the Service's containers no desired slot claimed: on a Machine no longer eligible, beyond the replica
 * count (scale down), or a duplicate.
 */
function unclaimedRemovals(
  project: string,
  machines: MachineObservation[],
  service: NormalizedService,
  { eligible, held }: { eligible: MachineObservation[]; held: MachineObservation[] },
  slotted: Placed[],
  claimed: Set<string>,
): Draft[] {
  const removals: Draft[] = [];
  const base = (m: MachineObservation, slot: string) => slotOn(m, project, service.name, slot);
  const ineligible = new Set(
    machines.filter((m) => !eligible.includes(m) && !held.includes(m)).map((m) => m.machineId),
  );
  for (const m of held) if (service.mode !== "global") ineligible.add(m.machineId);
  for (const p of slotted) {
    if (claimed.has(p.container.id)) continue;
    if (ineligible.has(p.machine.machineId)) {
      removals.push({
        ...base(p.machine, p.container.slot),
        kind: "remove",
        container: ref(p.container),
        reason: "ineligible",
      });
      continue;
    }
    const numeric = /^[1-9][0-9]*$/.test(p.container.slot);
    removals.push({
      ...base(p.machine, p.container.slot),
      kind: "remove",
      container: ref(p.container),
      reason: numeric && Number(p.container.slot) > (service.replicas ?? 1) ? "scale_down" : "duplicate",
    });
  }

  return removals;
}

/** One Service's operations and its summary. */
export interface ServicePlan {
  ops: Draft[];
  summary: ServiceSummary;
}

/** A long-running Service's operations: its hook, its slots, its Serving Pointer move, its removals. */
export function planService(
  options: PlanOptions,
  written: NormalizedService,
  placed: Placed[],
  warnings: string[],
  pinned: VolumePlacement[],
): ServicePlan {
  const { project, deploymentId } = options.intent;
  const locality = volumePlacement(project, written, options.snapshot, warnings);
  if (locality !== undefined) pinned.push(locality);
  // The Machine re-checks x-machines before it creates: it names the Writer's Machine, as a Move leaves it.
  const service = locality?.overrides === undefined
    ? written
    : { ...written, machines: [locality.machineName] };
  const { eligible, held } = placeable(project, service, options.snapshot.machines, locality);
  const monitorMs = service.update.monitorMs ?? options.monitorMs ?? DEFAULT_MONITOR_MS;
  const gate: HealthGate | null = options.skipHealth ? null : healthGate(service.healthcheck, monitorMs);
  const { order, reason } = updateOrder(service);
  // One replacement after another unless the Compose file says how many at once (0: all).
  const parallelism = service.update.parallelism ?? 1;
  const delayMs = service.update.delayMs ?? 0;
  // Replacements planned so far: the first `parallelism` roll after none, so no delay holds them.
  let rolling = 0;
  const base = (m: MachineObservation, slot: string) => slotOn(m, project.name, service.name, slot);
  const hooks = placed.filter((p) => p.container.slot === "hook");
  const slotted = placed.filter((p) => p.container.slot !== "hook");
  const changes: Draft[] = [];
  const removals: Draft[] = [];
  const claimed = new Set<string>();
  // Deployments of the containers this Deploy keeps, and the drafts that make new containers.
  const kept = new Set<string>();
  const fresh: Draft[] = [];
  let upToDate = 0;

  const { slots, oneEach } = desiredSlots(project.name, service, eligible, slotted);

  for (const { slot, machine, machineKey } of slots) {
    const spec = serviceContainerSpec(project, service, {
      deploymentId,
      slot,
      machineId: machineKey,
      network: networkOf(options, machine),
    });
    const digest = specDigest(spec);
    const here = slotted.filter((p) => p.container.slot === slot && p.machine.machineId === machine.machineId)
      .map((p) => p.container).sort(byPreference);
    for (const c of here) claimed.add(c.id);
    const up = here.filter((c) => c.spec_digest === digest);
    const stale = here.filter((c) => c.spec_digest !== digest);
    const keep = up[0];
    // Beside an UpToDate container, a stopped stale one (a retire loop stopped it) is only removed.
    const retired = keep === undefined ? [] : stale.filter((c) => NOT_RUNNING.has(c.state));
    const live = stale.filter((c) => !retired.includes(c));
    const old = live[0];
    const at = base(machine, slot);
    if (keep !== undefined) kept.add(keep.deployment);
    if (keep !== undefined && old === undefined) {
      if (NOT_RUNNING.has(keep.state)) {
        changes.push({ ...at, kind: "start", container: ref(keep), health: gate });
      } else {
        upToDate++;
        if (keep.state === "paused") {
          warnings.push(`Container "${keep.name}" is paused; Deploy leaves it paused`);
        }
      }
    } else if (old !== undefined) {
      const draft: Draft = {
        ...at,
        kind: "replace",
        old: ref(old),
        spec: keep === undefined ? spec : adopt(spec, keep),
        order,
        orderReason: reason,
        ...(parallelism === 1 ? {} : { parallelism }),
        ...(delayMs > 0 && parallelism > 0 && rolling >= parallelism ? { delayMs } : {}),
        oldStop: "client",
        ...changeOf(options, service, old, machine),
        health: gate,
      };
      changes.push(draft);
      rolling++;
      if (keep === undefined) fresh.push(draft);
    } else {
      const draft: Draft = { ...at, kind: "create", spec, health: gate };
      changes.push(draft);
      fresh.push(draft);
    }
    for (const extra of [...up.slice(1), ...live.slice(1)]) {
      removals.push({ ...at, kind: "remove", container: ref(extra), reason: "duplicate" });
    }
    for (const gone of retired) {
      removals.push({ ...at, kind: "remove", container: ref(gone), reason: "superseded" });
    }
  }
  // A Global slot on a Machine that refuses new workloads stays as it is: a Drain moves replicated slots only.
  if (service.mode === "global") {
    for (const m of held) {
      const there = slotted.filter((p) => p.machine.machineId === m.machineId);
      for (const p of there) claimed.add(p.container.id);
      if (there.length > 0) {
        warnings.push(
          `Global Service "${project.name}/${service.name}" keeps its container on "${m.machineName}", which does not accept workloads`,
        );
      }
    }
  }
  removals.push(
    ...unclaimedRemovals(
      project.name,
      options.snapshot.machines,
      service,
      { eligible, held },
      slotted,
      claimed,
    ),
  );

  const ops: Draft[] = [];
  const first = changes.find((op) => op.kind === "create" || op.kind === "replace");
  if (service.preDeploy !== null && first !== undefined) {
    const machine = options.snapshot.machines.find((m) => m.machineId === first.machineId)!;
    ops.push({
      ...base(machine, "hook"),
      kind: "hook",
      spec: hookContainerSpec(project, service, deploymentId, networkOf(options, machine)),
      timeoutMs: service.preDeploy.timeoutMs ?? options.hookTimeoutMs ?? DEFAULT_HOOK_TIMEOUT_MS,
      previous: hooks.filter((p) => p.machine.machineId === machine.machineId).map((p) => ref(p.container)),
    });
  }
  ops.push(...changes);
  const waitMs = healthWaitMs(service.healthcheck, monitorMs);
  if (gate !== null && changes.length > 0 && waitMs > gate.deadlineMs) {
    warnings.push(
      `Service "${project.name}/${service.name}": its healthcheck allows a new container ${
        formatDurationMs(waitMs)
      } to pass (start_period + (interval + timeout) × retries); the health gate waits at most ${
        formatDurationMs(gate.deadlineMs)
      }, then counts it failed`,
    );
  }
  const replacing = changes.filter((op) => op.kind === "replace").length;
  if (order === "stop-first" && parallelism !== 1 && replacing > 1) {
    const down = parallelism === 0 ? replacing : Math.min(parallelism, replacing);
    warnings.push(
      `Service "${project.name}/${service.name}" is replaced stop-first ${
        parallelism === 0 ? "all at once" : `${parallelism} at a time`
      } (update_config.parallelism): up to ${down} of its containers are down at once`,
    );
  }
  if (options.serving !== undefined) {
    const point = pointOf(project.name, service, deploymentId, { changes, fresh, kept }, warnings);
    if (point !== undefined) ops.push(point);
  }
  ops.push(...removals);

  if (oneEach && service.mode !== "global" && (service.replicas ?? 1) > 1) {
    warnings.push(
      `Service "${project.name}/${service.name}" publishes host ports: its ${service.replicas} replicas run on ${service.replicas} different Machines`,
    );
  }
  warnings.push(...unsupportedFields(project, service));
  return {
    ops,
    summary: {
      service: service.name,
      desired: slots.length,
      upToDate,
      changing: changes.length,
      removing: removals.length,
    },
  };
}

/**
 * A Service others wait to complete: one container that runs to exit 0 (as a pre-deploy hook does) before the
 * Services after it in dependency order. An exited-0 container of the same spec is UpToDate and runs no more; a
 * changed spec runs again after its earlier containers are removed.
 */
export function planCompletion(
  options: PlanOptions,
  service: NormalizedService,
  placed: Placed[],
): ServicePlan {
  const { project, deploymentId } = options.intent;
  const eligible = eligibleMachines(project, service, options.snapshot.machines);
  const planned = serviceContainerSpec(project, service, {
    deploymentId,
    slot: "run",
    network: options.network,
  });
  // It is meant to stop: never restarted by Docker, never probed.
  const spec = { ...planned, restart: { policy: "no" as const }, healthcheck: { disabled: true as const } };
  const digest = specDigest(spec);
  const done = placed.find((p) =>
    p.container.spec_digest === digest && p.container.state === "exited" && p.container.exit_code === 0
  );
  const summary = { service: service.name, desired: 1, upToDate: 0, changing: 0, removing: 0 };
  const base = (m: MachineObservation, slot: string) => slotOn(m, project.name, service.name, slot);
  if (done !== undefined) {
    const extra = placed.filter((p) => p !== done);
    summary.upToDate = 1;
    summary.removing = extra.length;
    return {
      ops: extra.map((p) => ({
        ...base(p.machine, p.container.slot),
        kind: "remove" as const,
        container: ref(p.container),
        reason: "superseded" as const,
      })),
      summary,
    };
  }
  const machine = placed.find((p) => eligible.some((m) => m.machineId === p.machine.machineId))?.machine ??
    eligible[0];
  const elsewhere = placed.filter((p) => p.machine.machineId !== machine.machineId);
  summary.changing = 1;
  summary.removing = elsewhere.length;
  return {
    ops: [
      {
        ...base(machine, "run"),
        kind: "hook",
        spec,
        timeoutMs: options.hookTimeoutMs ?? DEFAULT_HOOK_TIMEOUT_MS,
        previous: placed.filter((p) => p.machine.machineId === machine.machineId).map((p) =>
          ref(p.container)
        ),
      },
      ...elsewhere.map((p) => ({
        ...base(p.machine, p.container.slot),
        kind: "remove" as const,
        container: ref(p.container),
        reason: "superseded" as const,
      })),
    ],
    summary,
  };
}
