/**
 * Plans the removal of a Project's or one Service's containers (`ployz rm`): the Preview of what the reachable
 * Machines hold. Named volumes are kept, so a removal alone loses no data.
 *
 * @module
 */

import type { NormalizedProject } from "../compose/types.ts";
import type { MachineObservation } from "./snapshot.ts";
import type { Plan } from "./types.ts";

/** Input of {@linkcode planRemoval}. */
export interface RemovalOptions {
  /** The Project. */
  project: string;
  /** Only this Service, when given. */
  service?: string;
  /** What each Machine answered. */
  machines: MachineObservation[];
  /** The Project's Saved State (kept for callers; volumes are never removed by the plan). */
  saved?: NormalizedProject;
  /** Id recorded for this removal. */
  deploymentId: string;
  /** When observed, ISO 8601. */
  observedAt: string;
}

/** One `remove` per observed container of the Project (or Service), hooks included. */
export function planRemoval(options: RemovalOptions): Plan {
  const ops: Plan["ops"] = [];
  let observed = 0;
  for (const m of options.machines) {
    for (const c of m.containers) {
      if (c.project !== options.project) continue;
      observed++;
      if (options.service !== undefined && c.service !== options.service) continue;
      ops.push({
        index: ops.length,
        kind: "remove",
        machineId: m.machineId,
        machineName: m.machineName,
        project: options.project,
        service: c.service,
        slot: c.slot,
        container: { id: c.id, name: c.name },
        reason: "requested",
      });
    }
  }
  return {
    deploymentId: options.deploymentId,
    project: options.project,
    ops,
    warnings: [],
    dataLoss: [],
    services: [],
    observedContainers: observed,
    observedAt: options.observedAt,
  };
}
