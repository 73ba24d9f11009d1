// What a Deploy needs a Machine to serve, checked against its DescribeContract before anything is asked of it,
// so an older daemon is refused up front by capability name instead of failing halfway through a plan.
import { CAPABILITIES } from "../rpc/mod.ts";
import type { Op, Plan } from "../deploy/mod.ts";

/** What taking a Snapshot calls on each Machine. */
export const SNAPSHOT_CAPABILITIES: readonly string[] = [
  CAPABILITIES.status,
  CAPABILITIES.listContainers,
  CAPABILITIES.inspectImage,
];

function forOp(op: Op): string[] {
  // A container that ships files (secrets, configs, relative binds) is created through the route that carries them.
  const files = "spec" in op && (op.spec.files ?? []).length > 0
    ? [CAPABILITIES.ensureContainerWithFiles]
    : [];
  return [...forKind(op), ...files];
}

function forKind(op: Op): string[] {
  const health = "health" in op && op.health !== null ? [CAPABILITIES.waitHealthy] : [];
  switch (op.kind) {
    case "create":
      return [CAPABILITIES.ensureContainer, CAPABILITIES.startContainer, ...health];
    case "replace":
      // Compensation restarts the old container and stops the new one.
      return [
        CAPABILITIES.ensureContainer,
        CAPABILITIES.startContainer,
        CAPABILITIES.stopContainer,
        CAPABILITIES.removeContainer,
        CAPABILITIES.listContainers,
        ...health,
      ];
    case "start":
      return [CAPABILITIES.startContainer, ...health];
    case "stop":
      return [CAPABILITIES.stopContainer];
    case "remove":
      return [CAPABILITIES.stopContainer, CAPABILITIES.removeContainer];
    case "hook":
      return [
        CAPABILITIES.ensureContainer,
        CAPABILITIES.listContainers,
        CAPABILITIES.stopContainer,
        CAPABILITIES.removeContainer,
      ];
    case "point":
      return [CAPABILITIES.setPointer];
    case "ingress":
      return [CAPABILITIES.listContainers, CAPABILITIES.ensureContainer, CAPABILITIES.startContainer];
    case "image":
      return [CAPABILITIES.pullImageFromPeer];
    case "pull":
      return [CAPABILITIES.pullImage];
  }
}

/** Every capability the plan's operations call, in order of first use; only those on `machineId` when given. */
export function planCapabilities(plan: Plan, machineId?: string): string[] {
  const ops = machineId === undefined ? plan.ops : plan.ops.filter((op) => op.machineId === machineId);
  return [...new Set(ops.flatMap(forOp))];
}

/** Throws `unsupported` naming the first capability in `names` the Machine does not serve. */
export async function requireCapabilities(
  client: { requireCapability(name: string): Promise<void> },
  names: readonly string[],
): Promise<void> {
  for (const name of names) await client.requireCapability(name);
}
