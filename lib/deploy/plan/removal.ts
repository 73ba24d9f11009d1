/**
 * Plans the removal of a Project's or one Service's containers (`ployz rm`), with Data Loss for every Service
 * whose Saved State mounts named volumes.
 *
 * @module
 */

import type { NormalizedProject, VolumeMount } from "../compose/types.ts";
import type { MachineObservation } from "./snapshot.ts";
import type { DataLoss, Plan } from "./types.ts";

/** Input of {@linkcode planRemoval}. */
export interface RemovalOptions {
  /** The Project. */
  project: string;
  /** Only this Service, when given. */
  service?: string;
  /** What each Machine answered. */
  machines: MachineObservation[];
  /** The Project's Saved State, to find mounted volumes. */
  saved?: NormalizedProject;
  /** Id recorded for this removal. */
  deploymentId: string;
  /** When observed, ISO 8601. */
  observedAt: string;
}

/** One `remove` per observed container of the Project (or Service), hooks included. */
export function planRemoval(options: RemovalOptions): Plan {
  const ops: Plan["ops"] = [];
  const services = new Set<string>();
  let observed = 0;
  for (const m of options.machines) {
    for (const c of m.containers) {
      if (c.project !== options.project) continue;
      observed++;
      if (options.service !== undefined && c.service !== options.service) continue;
      services.add(c.service);
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
  const dataLoss: DataLoss[] = [];
  for (const name of [...services].sort()) {
    const saved = options.saved?.services[name];
    const volumes = saved?.mounts.filter((m): m is VolumeMount =>
      m.type === "volume" && m.source !== ""
    ).map((m) => options.saved?.volumes[m.source]?.dockerName ?? m.source) ?? [];
    if (volumes.length > 0) {
      dataLoss.push({
        name: `${options.project}/${name}`,
        reason: `Service "${options.project}/${name}" is removed with the containers that use volume ${
          volumes.map((v) =>
            `"${v}"`
          ).join(", ")
        }`,
      });
    }
  }
  return {
    deploymentId: options.deploymentId,
    project: options.project,
    ops,
    warnings: [],
    dataLoss,
    services: [],
    observedContainers: observed,
    observedAt: options.observedAt,
  };
}
