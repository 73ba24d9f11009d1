/**
 * `startDaemon`: assembles the Machine daemon. It reads (or mints) the local Machine record and key pair, opens
 * Docker, starts the Observe Store runtime, builds the {@link ClusterLifecycle} (which reopens the replicated store,
 * the publisher, the Cluster link and serving when the Machine is in a Cluster), assembles the handlers of every
 * route group, and serves Machine RPC on `<runDir>/ployz.sock`. `stop` ends long calls, closes the server, stops
 * the lifecycle and the Observe Store child, and removes the socket; the WireGuard interface stays up.
 *
 * @module
 */

import { buildHandlers, uploadIdleMsFromEnv } from "./build_handlers.ts";
import { join } from "node:path";
import { DockerError, type NetworkSpec, openEngine } from "../deploy/machine/mod.ts";
import { DEFAULT_INSTALL_PATHS } from "../installer/machine/mod.ts";
import { DEFAULT_MEMBERSHIP_THRESHOLDS, defaultEndpoints, parseMachineSubnet } from "../mesh/mod.ts";
import { DEFAULT_LAYOUT } from "../permissions/mod.ts";
import {
  advertisedCapabilities,
  createRpcApp,
  listenUnix,
  PROTOCOL_MAJOR,
  type RpcApp,
  RpcError,
  type RpcHandlers,
  type SocketServer,
  VIA_PREFIX,
} from "../rpc/mod.ts";
import { openStore, signingPublicKey, StoreError } from "../store/mod.ts";
import { ClusterLifecycle } from "./cluster_lifecycle.ts";
import { ClusterLink } from "./cluster_link.ts";
import { containerHandlers } from "./container_handlers.ts";
import { execHandlers } from "./exec_handlers.ts";
import { createForwarder, forwardJson, type ForwardTarget } from "./forward.ts";
import { imageHandlers } from "./image_handlers.ts";
import { localImage, PulledImages } from "./image_pulls.ts";
import { ensureKeyPair, ensureSigningSecret, keyPath } from "./keys.ts";
import { loadOrCreateMachine, type LocalMachine, writeMachineFile } from "./machine_file.ts";
import { machineHandlers, machineToWire } from "./machine_handlers.ts";
import { watchMachineNetwork } from "./machine_network.ts";
import { meshRpcHandler, storeCallers } from "./mesh_rpc.ts";
import { type MeshSettings, SYNC_PORT } from "./mesh_settings.ts";
import { MutationGate } from "./mutation_gate.ts";
import { observeHandlers } from "./observe_proxy.ts";
import { startObserveRuntime } from "./observe_runtime.ts";
import { startPublisher } from "./publisher.ts";
import { leaveStatus } from "../serving/mod.ts";
import { servingHandlers } from "./serving_handlers.ts";
import { type ServingRuntime, startServingRuntime } from "./serving_runtime.ts";
import { startVolumeRuntime, type VolumeRuntime } from "./volume_runtime.ts";
import { hostExec } from "../volume/mod.ts";
import { guardMutations, MUTATING_ROUTES, upgradeHandlers, type UpgradeHost } from "./upgrade_handlers.ts";

/** Where the Machine keeps its files and where Docker listens; lib/permissions' `Layout` fits. */
export interface DaemonPaths {
  /** Machine data: `machine.json`, `keys/`, `store.db`. */
  dataDir: string;
  /** Runtime files: `ployz.sock`. */
  runDir: string;
  /** Docker's unix socket. */
  dockerSocket: string;
}

/** How to run the daemon. */
export interface DaemonOptions {
  /** Where the Machine keeps its files and where Docker listens. */
  layout: DaemonPaths;
  /** The daemon's release, reported by DescribeContract. */
  daemonVersion: string;
  /** Machine Name given to a freshly minted record; normally the hostname. */
  defaultName: string;
  /** The Machine's Docker bridge network; `ployz` in production. */
  network?: string;
  /** Labels added to every Docker object the daemon creates (a test run's `ployz.test`). */
  extraLabels?: Record<string, string>;
  /** Publisher rescan period; default 30 s. */
  rescanMs?: number;
  /** One line per notable event; never key material or environment values. */
  log?: (line: string) => void;
  /** How to take part in the mesh; `undefined` runs without WireGuard and store sync. */
  mesh?: MeshSettings;
}

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
  const { layout, mesh, daemonVersion } = options;
  const log = options.log ?? (() => {});
  const network = options.network ?? "ployz";
  const { record, signingSecret } = await loadRecord(layout.dataDir, options.defaultName);
  const engine = openEngine({
    socketPath: layout.dockerSocket,
    machineId: record.id,
    network,
    extraLabels: options.extraLabels,
  });
  const stopping = new AbortController();
  // Containers a client asked to leave every proxy before it stops them (daemon memory: a restart forgets them).
  const leavingMarks = new Map<string, string>();
  // On every start, whatever the phase: the Observe Store holds no Membership state.
  const observe = startObserveRuntime({ layout: { dockerRoot: DEFAULT_LAYOUT.dockerRoot, ...layout }, log });
  const endpoints = mesh === undefined ? [] : mesh.advertiseEndpoints ?? defaultEndpoints(
    Deno.networkInterfaces(),
    { port: mesh.listenPort, clusterNetwork: mesh.clusterNetwork, skipInterfaces: [mesh.interfaceName] },
  );
  // Known once the handlers are assembled; the Machine's row and the contract name them.
  let capabilities: string[] = [];
  // Built once the handlers exist; the mesh listener may start before that and answers `unavailable` meanwhile.
  const served: { app?: RpcApp } = {};
  const meshRpc = meshRpcHandler({
    caller: storeCallers(() => lifecycle.store),
    self,
    fetch: (request, signal) =>
      served.app?.fetch(request, signal) ??
        Response.json({ error: { code: "unavailable", message: "The daemon is starting", details: {} } }, {
          status: 503,
        }),
  });
  // Set once the volume runtime started (below); the serving runtime asks it to destroy removed Volumes.
  const volumeRuntime: { current?: VolumeRuntime } = {};
  const lifecycle: ClusterLifecycle<ServingRuntime> = new ClusterLifecycle(record, {
    dataDir: layout.dataDir,
    // Off the mesh Docker masquerades the network as usual; on it, the mesh firewall masquerades only what leaves
    // the Cluster network (lib/mesh's firewall), so Docker must not.
    networkSpec: (subnet): NetworkSpec => ({
      name: network,
      subnet,
      gateway: parseMachineSubnet(subnet).gateway,
      dockerMasquerade: mesh === undefined,
    }),
    watchNetwork: (spec, signal) => watchMachineNetwork({ engine, spec, log, signal }),
    engine,
    thresholds: mesh?.thresholds ?? DEFAULT_MEMBERSHIP_THRESHOLDS,
    log,
    // Any HTTP answer from its Machine RPC listener on the mesh proves the daemon alive; a refusal included.
    probePeer: async (machineId, signal) => {
      const target = meshTarget(machineId);
      if (target === undefined) return false;
      const response = await fetch(`http://${target.hostname}:${target.port}/rpc/ployz.machine.status.v1`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ "protocol_major": PROTOCOL_MAJOR }),
        signal,
      });
      await response.body?.cancel();
      return true;
    },
    openStore: (path, siteId, clusterId) => openStore({ path, siteId, clusterId, signingSecret }),
    machineRow: (r) => ({ ...machineToWire(r), endpoints, capabilities, "daemon_version": daemonVersion }),
    openLink: (store, r, hints) =>
      new ClusterLink({
        store,
        settings: mesh,
        keyPath: keyPath(layout.dataDir),
        selfId: r.id,
        subnet: r.subnet!,
        hints,
        log,
        rpc: meshRpc,
        removed: r.removed !== undefined,
        onRemoved: (notice) => {
          lifecycle.noteRemoved(notice).catch((error) =>
            log(`cannot record the removal: ${error instanceof Error ? error.message : String(error)}`)
          );
        },
      }),
    startPublisher: (store) =>
      startPublisher({ engine, store, rescanMs: options.rescanMs, log, leaving: leavingMarks }),
    startServing: (store, subnet) =>
      startServingRuntime({
        store,
        engine,
        layout,
        gateway: subnet.gateway,
        network,
        record: () => ({
          phase: lifecycle.record.phase,
          acceptsIngress: lifecycle.record.accepts_ingress !== false,
        }),
        down: () => lifecycle.downSet(),
        log,
        // The volume runtime starts after the lifecycle; a removal before it exists has no Pool copy to destroy.
        removeProvisioned: (volume, project) =>
          volumeRuntime.current?.remove(volume, project) ?? Promise.resolve(false),
      }),
  });

  function self(): { id: string; name: string } {
    return { id: lifecycle.record.id, name: lifecycle.record.name };
  }

  /** A Machine's Machine RPC listener on the mesh, from its replicated row. */
  function meshTarget(machineId: string): ForwardTarget | undefined {
    if (lifecycle.store?.retiredIds().has(machineId)) return undefined;
    const row = lifecycle.store?.machines.get(machineId);
    if (row?.subnet === undefined) return undefined;
    try {
      return { name: row.name, hostname: parseMachineSubnet(row.subnet).gateway, port: SYNC_PORT };
    } catch {
      return undefined;
    }
  }

  const volumes: VolumeRuntime = await startVolumeRuntime({
    dataDir: layout.dataDir,
    exec: hostExec(),
    self,
    store: () => lifecycle.store,
    log,
    rescanMs: options.rescanMs,
    engine,
    resolve: (machineId) => meshTarget(machineId),
    stopping: stopping.signal,
    // Writer{start}: the same ensure a Deploy uses (admission, DNS, shipped files), bound once routes exist.
    ensureStarted: async (spec) => {
      await routes.ensureContainer!({ spec, start: true }, {
        capability: "ployz.volume.set_copy.v1",
        signal: stopping.signal,
      });
    },
  });
  volumeRuntime.current = volumes;
  const forwarder = createForwarder({
    self,
    resolve: meshTarget,
    observe: (machineId) => describeObserved(lifecycle, machineId),
    local: (request, signal) => served.app!.fetch(request, signal),
  });
  // Upgrades over RPC, and the interlock: mutations are counted and refused while an upgrade attempt runs.
  const upgradeHost: UpgradeHost = {
    paths: { ...DEFAULT_INSTALL_PATHS, layout: { ...DEFAULT_INSTALL_PATHS.layout, ...layout } },
    gate: new MutationGate(),
    machineName: () => lifecycle.record.name,
  };
  // Which images Ployz pulled or copied here, and the pinned references copied from peers (never replicated).
  const pulled = new PulledImages(join(layout.dataDir, "pulled_images.json"));
  const routes: RpcHandlers = {
    ...machineHandlers({
      lifecycle,
      engine,
      network,
      daemonVersion,
      endpoints,
      capabilities: () => capabilities,
      observe: () => observe.state(),
    }),
    ...containerHandlers({
      record: () => lifecycle.record,
      engine,
      stopping: stopping.signal,
      serving: () => lifecycle.serving,
      filesDir: join(layout.dataDir, "files"),
      volumes,
      imageFor: async (ref, signal) => (await localImage(engine, pulled, ref, signal))?.dockerRef,
      leaving: {
        marks: leavingMarks,
        republish: () => lifecycle.rescan(),
        status: (id) =>
          leaveStatus(lifecycle.participatingStore("read leave acks"), id, lifecycle.serving?.down()),
      },
    }),
    ...imageHandlers({
      engine,
      self,
      resolve: meshTarget,
      stopping: stopping.signal,
      log,
      pulled,
    }),
    ...execHandlers({ engine, stopping: stopping.signal, log }),
    ...buildHandlers({
      engine,
      record: () => lifecycle.record,
      buildsDir: join(layout.dataDir, "builds"),
      stopping: stopping.signal,
      log,
      pulled,
      uploadIdleMs: uploadIdleMsFromEnv(),
    }),
    ...servingHandlers(lifecycle),
    ...volumes.handlers,
    ...observeHandlers({
      record: () => lifecycle.record,
      observeSocket: join(layout.runDir, "observe.sock"),
      stopping: stopping.signal,
    }),
    forward: (req, ctx) => forwardJson(forwarder, req, ctx.signal),
  };
  const handlers: RpcHandlers = {
    ...guardMutations(routes, upgradeHost, [
      ...MUTATING_ROUTES,
      "pullImageFromPeer",
      "pullImage",
      "pruneImages",
      "setVolumeCopy",
    ]),
    ...upgradeHandlers(upgradeHost),
  };
  capabilities = advertisedCapabilities(handlers);
  lifecycle.resume();

  const rpcApp = createRpcApp(handlers, {
    toRpcError,
    onInternalError: (capability, error) =>
      log(
        `internal error serving "${capability}": ${error instanceof Error ? error.message : String(error)}`,
      ),
  });
  served.app = rpcApp;
  const socketPath = join(layout.runDir, "ployz.sock");
  let server: SocketServer;
  try {
    server = await listenUnix(
      { path: socketPath },
      (request, signal) =>
        new URL(request.url).pathname.startsWith(VIA_PREFIX)
          ? forwarder.serveVia(request, signal)
          : rpcApp.fetch(request, signal),
    );
  } catch (error) {
    await volumes.stop();
    await lifecycle.stop();
    await observe.close();
    throw error;
  }

  let stopped: Promise<void> | undefined;
  async function stop(): Promise<void> {
    stopped ??= (async () => {
      stopping.abort();
      await server.shutdown();
      await volumes.stop();
      await lifecycle.stop();
      // A runtime unit keeps running; a spawned child ends with the daemon.
      await observe.close();
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

/**
 * The local record, minted on first start, with the public halves of the Machine's WireGuard key pair and of its
 * signing key; and the signing secret its store signs changes with.
 */
async function loadRecord(
  dataDir: string,
  defaultName: string,
): Promise<{ record: LocalMachine; signingSecret: Uint8Array }> {
  await Deno.mkdir(dataDir, { recursive: true });
  const { record } = await loadOrCreateMachine(dataDir, defaultName);
  const key = await ensureKeyPair(dataDir);
  const signingSecret = await ensureSigningSecret(dataDir);
  const signingKey = signingPublicKey(signingSecret);
  if (record.public_key === key.publicKey && record.signing_key === signingKey) {
    return { record, signingSecret };
  }
  const next = { ...record, "public_key": key.publicKey, "signing_key": signingKey };
  await writeMachineFile(dataDir, next);
  return { record: next, signingSecret };
}

/** One line of what this Machine observes of another (membership, last handshake), for a refused forward. */
async function describeObserved(lifecycle: ClusterLifecycle, machineId: string): Promise<string> {
  const { name } = lifecycle.record;
  const listed = await lifecycle.membership();
  const m = listed.machines.find((x) => x.id === machineId);
  if (m === undefined) return `"${name}" holds no row for it`;
  const handshake = m.last_handshake_at === undefined
    ? "no WireGuard handshake seen"
    : `last handshake ${m.last_handshake_at} (${
      Math.round((Date.now() - Date.parse(m.last_handshake_at)) / 1000)
    } s ago)`;
  return `"${name}" observes it ${m.membership}, ${handshake}`;
}
