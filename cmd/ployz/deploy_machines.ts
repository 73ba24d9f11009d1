// The Machines a Deploy observes and acts on: every Machine the Entry Machine (the local daemon) lists, each
// reached through it over the mesh, or kept as an omission with the reason it is not asked (docs/bets.md, bet 4).
import type { MachineHandle, ObservationOmission } from "../../lib/deploy/mod.ts";
import type { MachineClient } from "../../lib/rpc/mod.ts";
import { clusterTargets } from "./cluster_targets.ts";
import { cliError } from "./connect.ts";

/** The Entry Machine and the other Machines of its Cluster, as a Deploy reaches them. */
export interface DeployMachines extends Disposable {
  /** The client of the Machine this CLI is attached to. */
  entry: MachineClient;
  /** Every Machine with a route, the Entry Machine first. */
  handles: (MachineHandle & { api: MachineClient })[];
  /** Machines the Entry Machine lists that this CLI cannot reach, with the reason. */
  omissions: ObservationOmission[];
}

/** Lists the Cluster through the Entry Machine; a Machine outside a Cluster is the only one. */
export async function deployMachines(options: { composeContext?: string } = {}): Promise<DeployMachines> {
  const targets = await clusterTargets(options);
  const handles: DeployMachines["handles"] = [];
  const omissions: ObservationOmission[] = [];
  for (const t of targets.targets) {
    if ("client" in t) handles.push({ id: t.id, name: t.name, api: t.client });
    else omissions.push({ machineName: t.name, reason: t.omitted });
  }
  return {
    entry: handles[0].api,
    handles,
    omissions,
    [Symbol.dispose]: () => targets[Symbol.dispose](),
  };
}

/** The client of the Machine with `machineId`, when it has a route. */
export function clientOf(machines: DeployMachines, machineId: string): MachineClient | undefined {
  return machines.handles.find((h) => h.id === machineId)?.api;
}

/** Runs a command body against the Cluster's Machines, translating errors and closing every client. */
export async function withDeployMachines<T>(
  body: (machines: DeployMachines) => Promise<T>,
  options: { composeContext?: string } = {},
): Promise<T> {
  using machines = await deployMachines(options);
  try {
    return await body(machines);
  } catch (error) {
    throw cliError(error);
  }
}
