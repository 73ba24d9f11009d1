/**
 * `startDaemon`: assembles the Machine daemon from its parts. The core (daemon_core.ts) reads (or mints) the local
 * Machine record and key pair, opens Docker and starts the Observe Store runtime; the Cluster lifecycle
 * (daemon_lifecycle.ts) reopens the replicated store, the publisher, the Cluster link and serving when the Machine is
 * in a Cluster; the volume runtime and the forwarder follow; the route groups (daemon_routes.ts) make the handler
 * table; and Machine RPC is served on `<runDir>/ployz.sock`. `stop` ends long calls, closes the server, stops the
 * volume runtime, the lifecycle and the Observe Store child, and removes the socket; the WireGuard interface stays up.
 *
 * @module
 */

import { join } from "node:path";
import { DockerError } from "../deploy/machine/mod.ts";
import {
  advertisedCapabilities,
  createRpcApp,
  listenUnix,
  RpcError,
  type SocketServer,
  VIA_PREFIX,
} from "../rpc/mod.ts";
import { StoreError } from "../store/mod.ts";
import { hostExec } from "../volume/mod.ts";
import { type DaemonCore, type DaemonOptions, openDaemonCore } from "./daemon_core.ts";
import {
  type DaemonLifecycle,
  describeObserved,
  type LateParts,
  meshTarget,
  openLifecycle,
  selfOf,
} from "./daemon_lifecycle.ts";
import { stopWithin } from "./bounded_stop.ts";
import { assembleHandlers } from "./daemon_routes.ts";
import { createForwarder } from "./forward.ts";
import type { LocalMachine } from "./machine_file.ts";
import { startVolumeRuntime, type VolumeRuntime } from "./volume_runtime.ts";
import { messageOf } from "../util/mod.ts";

/** How long a stop may take before the daemon gives up on what has not finished (lib/daemon/bounded_stop.ts). */
const STOP_WITHIN_MS = 30_000;

export type { DaemonOptions, DaemonPaths } from "./daemon_core.ts";

/** A running daemon. */
export interface Daemon extends AsyncDisposable {
  /** The local record as it is now. */
  readonly machine: LocalMachine;
  /** The Machine RPC socket. */
  readonly socketPath: string;
  /** Whether the replicated store is open (the Machine participates). */
  readonly participating: boolean;
  /** Rescans the Machine's containers into the store now (no-op before init). */
  rescan(): Promise<void>;
  /** Stops everything the daemon started. */
  stop(): Promise<void>;
}

/** Maps errors of the areas below to Machine RPC errors. */
export function toRpcError(error: unknown): RpcError | undefined {
  if (error instanceof DockerError || error instanceof StoreError) {
    return new RpcError(error.code, error.message, { details: error.details, cause: error });
  }
  return undefined;
}

/** Starts the daemon and listens on `<runDir>/ployz.sock`. */
export async function startDaemon(options: DaemonOptions): Promise<Daemon> {
  const core = await openDaemonCore(options);
  const late: LateParts = { capabilities: [] };
  const lifecycle = openLifecycle(core, late);
  const volumes = await startVolumes(core, lifecycle, late);
  late.volumes = volumes;
  const forwarder = createForwarder({
    self: () => selfOf(lifecycle),
    resolve: (machineId) => meshTarget(lifecycle.store, machineId),
    observe: (machineId) => describeObserved(lifecycle, machineId),
    local: (request, signal) => late.app!.fetch(request, signal),
  });
  const { routes, handlers } = assembleHandlers({ core, lifecycle, late, volumes, forwarder });
  late.routes = routes;
  late.capabilities = advertisedCapabilities(handlers);
  lifecycle.resume();
  late.app = createRpcApp(handlers, {
    toRpcError,
    onInternalError: (capability, error) =>
      core.log(
        `internal error serving "${capability}": ${messageOf(error)}`,
      ),
  });
  // What a stop is waiting for, for the line that says a stop outlived its bound.
  let stopStage = "closing its Machine RPC socket";
  const stopParts = async (): Promise<void> => {
    stopStage = "stopping Volume Runs";
    await volumes.stop();
    stopStage = "stopping the store, mesh, publisher and serving";
    await lifecycle.stop();
    // A runtime unit keeps running; a spawned child ends with the daemon.
    stopStage = "closing the Observe Store";
    await core.observe.close();
  };
  const socketPath = join(core.layout.runDir, "ployz.sock");
  let server: SocketServer;
  try {
    server = await listenUnix(
      { path: socketPath },
      (request, signal) =>
        new URL(request.url).pathname.startsWith(VIA_PREFIX)
          ? forwarder.serveVia(request, signal)
          : late.app!.fetch(request, signal),
    );
  } catch (error) {
    await stopParts();
    throw error;
  }
  let stopped: Promise<void> | undefined;
  async function stop(): Promise<void> {
    stopped ??= (async () => {
      core.stopping.abort();
      const parts = (async () => {
        await server.shutdown();
        await stopParts();
      })();
      await stopWithin(parts, STOP_WITHIN_MS, () => stopStage);
    })();
    await stopped;
  }
  return {
    get machine(): LocalMachine {
      return lifecycle.record;
    },
    socketPath,
    get participating(): boolean {
      return lifecycle.store !== undefined;
    },
    rescan: () => lifecycle.rescan(),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/** The volume runtime over the lifecycle's store; it starts a copy's container through the routes once they exist. */
function startVolumes(
  core: DaemonCore,
  lifecycle: DaemonLifecycle,
  late: LateParts,
): Promise<VolumeRuntime> {
  const stopping = core.stopping.signal;
  return startVolumeRuntime({
    dataDir: core.layout.dataDir,
    exec: hostExec(),
    self: () => selfOf(lifecycle),
    store: () => lifecycle.store,
    log: core.log,
    rescanMs: core.rescanMs,
    engine: core.engine,
    resolve: (machineId) => meshTarget(lifecycle.store, machineId),
    stopping,
    // Writer{start}: the same ensure a Deploy uses (admission, DNS, shipped files).
    ensureStarted: async (spec) => {
      await late.routes!.ensureContainer!({ spec, start: true }, {
        capability: "ployz.volume.set_copy.v1",
        signal: stopping,
      });
    },
  });
}
