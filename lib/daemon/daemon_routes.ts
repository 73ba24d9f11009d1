/**
 * The daemon's handler table: each catalogue route group's handlers over the daemon's parts, the mutations guarded
 * by the upgrade interlock, and the upgrade routes themselves.
 *
 * @module
 */

import { join } from "node:path";
import { DEFAULT_INSTALL_PATHS } from "../installer/machine/mod.ts";
import type { RpcHandlers } from "../rpc/mod.ts";
import { leaveStatus } from "../serving/mod.ts";
import { buildHandlers, uploadIdleMsFromEnv } from "./build_handlers.ts";
import { containerHandlers } from "./container_handlers.ts";
import type { DaemonCore } from "./daemon_core.ts";
import { type DaemonLifecycle, type LateParts, meshTarget, selfOf } from "./daemon_lifecycle.ts";
import { execHandlers } from "./exec_handlers.ts";
import { type Forwarder, forwardJson } from "./forward.ts";
import { imageHandlers } from "./image_handlers.ts";
import { localImage, PulledImages } from "./image_pulls.ts";
import { machineHandlers } from "./machine_handlers.ts";
import { MutationGate } from "./mutation_gate.ts";
import { observeHandlers } from "./observe_proxy.ts";
import { servingHandlers } from "./serving_handlers.ts";
import { guardMutations, MUTATING_ROUTES, upgradeHandlers, type UpgradeHost } from "./upgrade_handlers.ts";
import type { VolumeRuntime } from "./volume_runtime.ts";

/** The parts the route groups act through. */
export interface RouteParts {
  readonly core: DaemonCore;
  readonly lifecycle: DaemonLifecycle;
  readonly late: LateParts;
  readonly volumes: VolumeRuntime;
  readonly forwarder: Forwarder;
}

/** The routes the upgrade interlock refuses while an upgrade attempt runs, beyond {@link MUTATING_ROUTES}. */
const ALSO_MUTATING = ["pullImageFromPeer", "pullImage", "pruneImages", "setVolumeCopy"] as const;

/**
 * Every route group's handlers (`routes`), and what the daemon serves (`handlers`): those with mutations counted
 * and refused while an upgrade attempt runs, plus the upgrade routes.
 */
export function assembleHandlers(parts: RouteParts): { routes: RpcHandlers; handlers: RpcHandlers } {
  const { layout } = parts.core;
  const routes = routeGroups(parts);
  // Upgrades over RPC, and the interlock: mutations are counted and refused while an upgrade attempt runs.
  const upgradeHost: UpgradeHost = {
    paths: { ...DEFAULT_INSTALL_PATHS, layout: { ...DEFAULT_INSTALL_PATHS.layout, ...layout } },
    gate: new MutationGate(),
    machineName: () => parts.lifecycle.record.name,
  };
  const handlers: RpcHandlers = {
    ...guardMutations(routes, upgradeHost, [...MUTATING_ROUTES, ...ALSO_MUTATING]),
    ...upgradeHandlers(upgradeHost),
  };
  return { routes, handlers };
}

/** The handlers of each catalogue route group, unguarded. */
function routeGroups({ core, lifecycle, late, volumes, forwarder }: RouteParts): RpcHandlers {
  const { engine, layout, log } = core;
  const stopping = core.stopping.signal;
  const record = () => lifecycle.record;
  // Which images Ployz pulled or copied here, and the pinned references copied from peers (never replicated).
  const pulled = new PulledImages(join(layout.dataDir, "pulled_images.json"));
  return {
    ...machineHandlers({
      lifecycle,
      engine,
      network: core.network,
      daemonVersion: core.daemonVersion,
      endpoints: core.endpoints,
      capabilities: () => late.capabilities,
      observe: () => core.observe.state(),
    }),
    ...containerHandlers({
      record,
      engine,
      stopping,
      serving: () => lifecycle.serving,
      filesDir: join(layout.dataDir, "files"),
      volumes,
      imageFor: async (ref, signal) => (await localImage(engine, pulled, ref, signal))?.dockerRef,
      leaving: {
        marks: core.leavingMarks,
        republish: () => lifecycle.rescan(),
        status: (id) =>
          leaveStatus(lifecycle.participatingStore("read leave acks"), id, lifecycle.serving?.down()),
      },
    }),
    ...imageHandlers({
      engine,
      self: () => selfOf(lifecycle),
      resolve: (machineId) => meshTarget(lifecycle.store, machineId),
      stopping,
      log,
      pulled,
    }),
    ...execHandlers({ engine, stopping, log }),
    ...buildHandlers({
      engine,
      record,
      buildsDir: join(layout.dataDir, "builds"),
      stopping,
      log,
      pulled,
      uploadIdleMs: uploadIdleMsFromEnv(),
    }),
    ...servingHandlers(lifecycle),
    ...volumes.handlers,
    ...observeHandlers({ record, observeSocket: join(layout.runDir, "observe.sock"), stopping }),
    forward: (req, ctx) => forwardJson(forwarder, req, ctx.signal),
  };
}
