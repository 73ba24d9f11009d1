/**
 * Where a Service's containers go: the Machines it may run on (participating, accepting workloads, meeting its
 * `x-machines` and placement constraints) and its desired slots on them.
 *
 * @module
 */

import { type MachineFacts, placementRefusal } from "../compose/placement.ts";
import type { NormalizedProject, NormalizedService } from "../compose/types.ts";
import { isRunning } from "./draft.ts";
import { DeployError } from "./errors.ts";
import type { ObservedContainerView } from "./machine_api.ts";
import type { MachineObservation } from "./snapshot.ts";
import type { VolumePlacement } from "./volume_locality.ts";

/** A container the Snapshot saw, with its Machine. */
export interface Placed {
  machine: MachineObservation;
  container: ObservedContainerView;
}

/** Best first: running, then newest. */
export function byPreference(a: ObservedContainerView, b: ObservedContainerView): number {
  if (isRunning(a) !== isRunning(b)) return isRunning(a) ? -1 : 1;
  return (b.created_at ?? "").localeCompare(a.created_at ?? "");
}

function factsOf(m: MachineObservation): MachineFacts {
  return { id: m.machineId, name: m.machineName, labels: m.labels ?? {} };
}

/**
 * The Machines a Service may get new containers on: participating, accepting workloads, and meeting its
 * `x-machines` and placement constraints. `held` are those that meet its placement but refuse new workloads (a
 * drained Machine): a Global slot already there is kept, a replicated slot there moves elsewhere.
 */
export function placeable(
  project: NormalizedProject,
  service: NormalizedService,
  machines: MachineObservation[],
  pinned?: VolumePlacement,
): { eligible: MachineObservation[]; held: MachineObservation[] } {
  const participating = machines.filter((m) =>
    m.phase === "participating" && (pinned === undefined || m.machineId === pinned.machineId)
  );
  const where = `Service "${project.name}/${service.name}"`;
  const named = service.machines.length === 0 || pinned !== undefined
    ? participating
    : participating.filter((m) =>
      service.machines.includes(m.machineName) || service.machines.includes(m.machineId)
    );
  if (named.length === 0 && participating.length > 0) {
    throw new DeployError(
      "invalid_argument",
      `${where} can run on no observed Machine: x-machines names ${
        service.machines.map((m) => `"${m}"`).join(", ")
      }`,
      { service: service.name, machines: service.machines },
    );
  }
  const rule = { constraints: service.constraints };
  const refusals = named.map((m) => ({ m, why: placementRefusal(rule, factsOf(m)) }));
  const fits = refusals.filter((r) => r.why === undefined).map((r) => r.m);
  const eligible = fits.filter((m) => m.acceptsWorkloads !== false);
  const held = fits.filter((m) => m.acceptsWorkloads === false);
  if (fits.length === 0 && named.length > 0) {
    throw new DeployError(
      "invalid_argument",
      `${where} can run on no observed Machine: ${
        refusals.map((r) => `"${r.m.machineName}": ${r.why}`).join("; ")
      }`,
      { service: service.name, constraints: service.constraints ?? [] },
    );
  }
  if (eligible.length === 0 && held.length > 0) {
    throw new DeployError(
      "conflict",
      `${where} can run on no observed Machine: ${
        held.map((m) => `"${m.machineName}"`).join(", ")
      } meet its placement but do not accept workloads ("ployz machine accept NAME --workloads on")`,
      { service: service.name, held: held.map((m) => m.machineName) },
    );
  }
  return { eligible, held };
}

export function eligibleMachines(
  project: NormalizedProject,
  service: NormalizedService,
  machines: MachineObservation[],
): MachineObservation[] {
  return placeable(project, service, machines).eligible;
}

/** A slot of a Service and the Machine it goes to (`machineKey`: the Machine id a Global slot's name carries). */
export interface DesiredSlot {
  slot: string;
  machine: MachineObservation;
  machineKey: string;
}

/**
 * Desired slots: 1..replicas placed on the Machine already holding each, else the least loaded; Global: one slot
 * per eligible Machine. A fixed host port can be bound once per Machine (`oneEach`): such a Service gets at most one
 * slot on each.
 */
export function desiredSlots(
  project: string,
  service: NormalizedService,
  eligible: MachineObservation[],
  slotted: Placed[],
): { slots: DesiredSlot[]; oneEach: boolean } {
  const load = new Map(eligible.map((m) => [m.machineId, 0]));
  const slots: DesiredSlot[] = [];
  const fixedPorts = service.ports.filter((p) => p.kind === "host" && p.publishedPort > 0);
  const oneEach = fixedPorts.length > 0;
  if (oneEach && service.mode !== "global" && (service.replicas ?? 1) > eligible.length) {
    const first = fixedPorts[0];
    throw new DeployError(
      "invalid_argument",
      `Service "${project}/${service.name}" publishes host port ${
        first.kind === "host" ? first.publishedPort : ""
      }: its ${service.replicas} replicas need ${service.replicas} Machines, and ${eligible.length} ${
        eligible.length === 1 ? "is" : "are"
      } eligible`,
      { service: service.name, replicas: service.replicas, eligible: eligible.length },
    );
  }
  if (service.mode === "global") {
    for (const m of eligible) slots.push({ slot: "1", machine: m, machineKey: m.machineId });
  } else {
    for (let n = 1; n <= (service.replicas ?? 1); n++) {
      const slot = String(n);
      const free = (machineId: string): boolean => !oneEach || load.get(machineId) === 0;
      const holders = slotted.filter((p) =>
        p.container.slot === slot && load.has(p.machine.machineId) && free(p.machine.machineId)
      ).sort((a, b) => byPreference(a.container, b.container));
      let machine = holders[0]?.machine;
      if (machine === undefined) {
        machine = eligible.filter((m) => free(m.machineId))
          .sort((a, b) => load.get(a.machineId)! - load.get(b.machineId)!)[0];
      }
      load.set(machine.machineId, load.get(machine.machineId)! + 1);
      slots.push({ slot, machine, machineKey: "" });
    }
  }
  return { slots, oneEach };
}
