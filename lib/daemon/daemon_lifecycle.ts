/**
 * The daemon's Cluster lifecycle wired to the real parts: the bridge network, the replicated store, the Cluster
 * link with Machine RPC on the mesh, the publisher and the serving runtime. The lifecycle is built before the route
 * groups and the volume runtime exist; what it needs of them it reads through {@link LateParts} when asked.
 *
 * @module
 */

import type { NetworkSpec } from "../deploy/machine/mod.ts";
import { DEFAULT_MEMBERSHIP_THRESHOLDS, parseMachineSubnet } from "../mesh/mod.ts";
import { PROTOCOL_MAJOR, type RpcApp, type RpcHandlers } from "../rpc/mod.ts";
import { openStore, type Store } from "../store/mod.ts";
import { ClusterLifecycle } from "./cluster_lifecycle.ts";
import { ClusterLink, type PeerHint } from "./cluster_link.ts";
import type { DaemonCore } from "./daemon_core.ts";
import type { ForwardTarget } from "./forward.ts";
import { keyPath } from "./keys.ts";
import type { LocalMachine } from "./machine_file.ts";
import { machineToWire } from "./machine_handlers.ts";
import { watchMachineNetwork } from "./machine_network.ts";
import { meshRpcHandler, storeCallers } from "./mesh_rpc.ts";
import { SYNC_PORT } from "./mesh_settings.ts";
import { startPublisher } from "./publisher.ts";
import { type ServingRuntime, startServingRuntime } from "./serving_runtime.ts";
import type { MachineSubnet } from "./subnet.ts";
import type { VolumeRuntime } from "./volume_runtime.ts";
import { messageOf } from "../util/mod.ts";

/** The daemon's Cluster lifecycle, serving with the real serving runtime. */
export type DaemonLifecycle = ClusterLifecycle<ServingRuntime>;

/** Parts of the daemon built after the lifecycle, bound here once they exist. */
export interface LateParts {
  /** The advertised capabilities, known once the handlers are assembled; the Machine's row names them. */
  capabilities: string[];
  /** The Machine RPC app; the mesh listener may start before it exists and answers `unavailable` meanwhile. */
  app?: RpcApp;
  /** The volume runtime; the serving runtime asks it to destroy removed Volumes. */
  volumes?: VolumeRuntime;
  /** The route groups, unguarded; the volume runtime makes and starts a copy's container as a Deploy does. */
  routes?: RpcHandlers;
}

/** Builds (does not resume) the Cluster lifecycle of the daemon over its core. */
export function openLifecycle(core: DaemonCore, late: LateParts): DaemonLifecycle {
  const { engine, log, mesh } = core;
  const meshRpc = meshRpcHandler({
    caller: storeCallers(() => lifecycle.store),
    self: () => selfOf(lifecycle),
    fetch: (request, signal) =>
      late.app?.fetch(request, signal) ??
        Response.json({ error: { code: "unavailable", message: "The daemon is starting", details: {} } }, {
          status: 503,
        }),
  });
  const lifecycle: DaemonLifecycle = new ClusterLifecycle(core.record, {
    dataDir: core.layout.dataDir,
    networkSpec: (subnet) => machineNetworkSpec(core, subnet),
    watchNetwork: (spec, signal) => watchMachineNetwork({ engine, spec, log, signal }),
    engine,
    thresholds: mesh?.thresholds ?? DEFAULT_MEMBERSHIP_THRESHOLDS,
    log,
    probePeer: (machineId, signal) => probePeer(meshTarget(lifecycle.store, machineId), signal),
    openStore: (path, siteId, clusterId) =>
      openStore({ path, siteId, clusterId, signingSecret: core.signingSecret }),
    machineRow: (r) => ({
      ...machineToWire(r),
      endpoints: core.endpoints,
      capabilities: late.capabilities,
      "daemon_version": core.daemonVersion,
    }),
    openLink: (store, r, hints) => openLink(core, lifecycle, meshRpc, { store, record: r, hints }),
    startPublisher: (store) =>
      startPublisher({ engine, store, rescanMs: core.rescanMs, log, leaving: core.leavingMarks }),
    startServing: (store, subnet) => startServing(core, lifecycle, late, store, subnet),
  });
  return lifecycle;
}

/** This Machine's id and name as the lifecycle holds them now. */
export function selfOf(lifecycle: DaemonLifecycle): { id: string; name: string } {
  return { id: lifecycle.record.id, name: lifecycle.record.name };
}

/** A Machine's Machine RPC listener on the mesh, from its replicated row; none for a retired or unknown one. */
export function meshTarget(store: Store | undefined, machineId: string): ForwardTarget | undefined {
  if (store?.retiredIds().has(machineId)) return undefined;
  const row = store?.machines.get(machineId);
  if (row?.subnet === undefined) return undefined;
  try {
    return { name: row.name, hostname: parseMachineSubnet(row.subnet).gateway, port: SYNC_PORT };
  } catch {
    return undefined;
  }
}

/**
 * The Machine's bridge network for its subnet. Off the mesh Docker masquerades the network as usual; on it, the
 * mesh firewall masquerades only what leaves the Cluster network (lib/mesh's firewall), so Docker must not.
 */
function machineNetworkSpec(core: DaemonCore, subnet: string): NetworkSpec {
  return {
    name: core.network,
    subnet,
    gateway: parseMachineSubnet(subnet).gateway,
    dockerMasquerade: core.mesh === undefined,
  };
}

/** Any HTTP answer from a Machine's RPC listener on the mesh proves its daemon alive; a refusal included. */
async function probePeer(target: ForwardTarget | undefined, signal: AbortSignal): Promise<boolean> {
  if (target === undefined) return false;
  const response = await fetch(`http://${target.hostname}:${target.port}/rpc/ployz.machine.status.v1`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ "protocol_major": PROTOCOL_MAJOR }),
    signal,
  });
  await response.body?.cancel();
  return true;
}

/** The Cluster link of the record's Cluster, answering Machine RPC on the mesh and telling a proved removal. */
function openLink(
  core: DaemonCore,
  lifecycle: DaemonLifecycle,
  rpc: ReturnType<typeof meshRpcHandler>,
  { store, record, hints }: { store: Store; record: LocalMachine; hints: PeerHint[] },
): ClusterLink {
  const { log } = core;
  return new ClusterLink({
    store,
    settings: core.mesh,
    keyPath: keyPath(core.layout.dataDir),
    selfId: record.id,
    subnet: record.subnet!,
    hints,
    log,
    rpc,
    removed: record.removed !== undefined,
    onRemoved: (notice) => {
      lifecycle.noteRemoved(notice).catch((error) => log(`cannot record the removal: ${messageOf(error)}`));
    },
  });
}

/** The serving runtime of a participating Machine, reading its record and Down set from the lifecycle. */
function startServing(
  core: DaemonCore,
  lifecycle: DaemonLifecycle,
  late: LateParts,
  store: Store,
  subnet: MachineSubnet,
): Promise<ServingRuntime> {
  return startServingRuntime({
    store,
    engine: core.engine,
    layout: core.layout,
    gateway: subnet.gateway,
    network: core.network,
    record: () => ({
      phase: lifecycle.record.phase,
      acceptsIngress: lifecycle.record.accepts_ingress !== false,
    }),
    down: () => lifecycle.downSet(),
    log: core.log,
    // The volume runtime starts after the lifecycle; a removal before it exists has no Pool copy to destroy.
    removeProvisioned: (volume, project) => late.volumes?.remove(volume, project) ?? Promise.resolve(false),
  });
}

/** One line of what this Machine observes of another (membership, last handshake), for a refused forward. */
export async function describeObserved(lifecycle: DaemonLifecycle, machineId: string): Promise<string> {
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
