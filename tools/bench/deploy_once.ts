/**
 * One Deploy through one Machine's daemon, as `ployz deploy` runs it (Snapshot, Plan, execute) but without the
 * health gate: the part the Deploy benchmarks time.
 *
 * @module
 */
import {
  deployIntent,
  executePlan,
  newDeploymentId,
  type NormalizedProject,
  planDeploy,
  takeSnapshot,
} from "../../lib/deploy/mod.ts";
import type { MachineClient } from "../../lib/rpc/mod.ts";

/**
 * Deploys `project` (whose images are `images`) on the Machine `client` talks to, into Docker network `network`,
 * timing Snapshot, Plan and execute as `b`'s measured part; throws unless the Deploy succeeded.
 */
export async function timedDeploy(
  b: Deno.BenchContext,
  client: MachineClient,
  project: NormalizedProject,
  images: string[],
  network: string,
): Promise<void> {
  const machines = [{ id: "", name: "bench", api: client }];
  b.start();
  const snapshot = await takeSnapshot(machines, { project: project.name, images });
  const plan = planDeploy({
    intent: deployIntent(project, newDeploymentId()),
    snapshot,
    skipHealth: true,
    network,
  });
  const outcome = await executePlan(plan, new Map([[snapshot.machines[0].machineId, client]]));
  b.end();
  if (outcome.status !== "succeeded") {
    throw new Error(`Deploy ${outcome.status}: ${outcome.failed?.error.message}`);
  }
}
