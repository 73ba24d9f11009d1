// The Machines a Deploy observes and acts on: every Machine the Entry Machine lists, each reached through it over
// the mesh, or kept as an omission with the reason it is not asked (docs/bets.md, bet 4).
import type { ContainerSpec, MachineApi, MachineHandle, ObservationOmission } from "../deploy/mod.ts";
import type { FanOutTarget, MachineClient } from "../rpc/mod.ts";

/**
 * The Machine RPC a Deploy calls on one Machine: the planner's and executor's {@link MachineApi}, plus the
 * capability check and the create route that carries file content. `lib/rpc`'s `MachineClient` satisfies it.
 */
export interface DeployMachineApi extends MachineApi {
  /** Throws `unsupported` when the Machine does not serve `capability`. */
  requireCapability(capability: string): Promise<void>;
  /** `ployz.container.ensure_with_files.v1`: an ensure carrying the content of the files its spec ships. */
  ensureContainerWithFiles(
    request: { spec: ContainerSpec; start: boolean; files: Record<string, string> },
  ): ReturnType<MachineApi["ensureContainer"]>;
  /** `ployz.image.build_upload.v1`, on a client that can ask it. */
  buildUpload?: MachineClient["buildUpload"];
  /** `ployz.image.build.v1`, on a client that can ask it. */
  buildImage?: MachineClient["buildImage"];
}

/** The Entry Machine and the other Machines of its Cluster, as a Deploy reaches them. */
export interface DeployMachines {
  /** Every Machine with a route, the Entry Machine first. */
  handles: (MachineHandle & { api: DeployMachineApi })[];
  /** Machines the Entry Machine lists that cannot be reached, with the reason. */
  omissions: ObservationOmission[];
}

/** Splits listed targets into the Machines a Deploy reaches and the omissions it reports. */
export function deployMachinesOf<C extends DeployMachineApi>(
  targets: FanOutTarget<C>[],
): DeployMachines & { handles: (MachineHandle & { api: C })[] } {
  const handles: (MachineHandle & { api: C })[] = [];
  const omissions: ObservationOmission[] = [];
  for (const t of targets) {
    if ("client" in t) handles.push({ id: t.id, name: t.name, api: t.client });
    else omissions.push({ machineName: t.name, reason: t.omitted });
  }
  return { handles, omissions };
}

/** The API of the Machine with `machineId`, when it has a route. */
export function clientOf(machines: DeployMachines, machineId: string): DeployMachineApi | undefined {
  return machines.handles.find((h) => h.id === machineId)?.api;
}
