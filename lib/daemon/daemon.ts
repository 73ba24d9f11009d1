/**
 * `startDaemon`: the Machine daemon's lifecycle. On start it reads (or mints) the local Machine record and key
 * pair, reopens the replicated store when the Machine participates (or is joining), starts the publisher and the
 * Cluster link (WireGuard, peers from the `machines` rows, store sync over the mesh), and serves Machine RPC on
 * `<runDir>/ployz.sock`. `stop` ends long calls, closes the server, the publisher, the link, the store, and removes
 * the socket; the WireGuard interface stays up.
 *
 * Phases: `uninitialized` → `participating` (init founds a Cluster), or → `joining` (join) → `participating` once
 * its store caught up with the Entry Machine's vector; leave returns to `uninitialized`.
 *
 * @module
 */

import { join } from "node:path";
import { DockerError, type Engine, type NetworkSpec, openEngine } from "../deploy/mod.ts";
import {
  advertisedCapabilities,
  createRpcApp,
  type JoinRequest,
  type LeaveRequest,
  type LeaveResponse,
  listenUnix,
  RpcError,
  type RpcHandlers,
  type SocketServer,
  VIA_PREFIX,
} from "../rpc/mod.ts";
import { openStore, signingPublicKey, type Store, StoreError } from "../store/mod.ts";
import { defaultEndpoints } from "../mesh/mod.ts";
import { ClusterLink, type PeerHint } from "./cluster_link.ts";
import { buildHandlers, machineToWire } from "./handlers.ts";
import { mintId } from "./ids.ts";
import { observeHandlers } from "./observe_proxy.ts";
import { ensureKeyPair, ensureSigningSecret, keyPath } from "./keys.ts";
import { listMachines } from "./membership.ts";
import { type MeshSettings } from "./mesh_settings.ts";
import { DEFAULT_MEMBERSHIP_THRESHOLDS } from "../mesh/mod.ts";
import { loadOrCreateMachine, type LocalMachine, writeMachineFile } from "./machine_file.ts";
import { type Publisher, startPublisher } from "./publisher.ts";
import { type ServingRuntime, startServingRuntime } from "./serving_runtime.ts";
import { startObserveRuntime } from "./observe_runtime.ts";
import { DEFAULT_LAYOUT } from "../permissions/mod.ts";
import { pointerStatus, setServingPointer } from "../serving/mod.ts";
import { DEFAULT_SUBNET, parseSubnet } from "./subnet.ts";
import { DEFAULT_INSTALL_PATHS } from "../installer/mod.ts";
import { MutationGate } from "./mutation_gate.ts";
import { guardMutations, MUTATING_ROUTES, upgradeHandlers, type UpgradeHost } from "./upgrade_handlers.ts";
import { createForwarder, forwardJson, type ForwardTarget } from "./forward.ts";
import { meshRpcHandler } from "./mesh_rpc.ts";
import { watchMachineNetwork } from "./machine_network.ts";
import { execHandlers } from "./exec_handlers.ts";
import { imageHandlers } from "./image_handlers.ts";
import { parseMachineSubnet } from "../mesh/mod.ts";
import { SYNC_PORT } from "./mesh_settings.ts";
import type { RpcApp } from "../rpc/mod.ts";
import { sleep } from "../util/mod.ts";

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

/** The store file inside the data directory. */
export function storePath(dataDir: string): string {
  return join(dataDir, "store.db");
}

/** Maps errors of the areas below to Machine RPC errors. */
export function toRpcError(error: unknown): RpcError | undefined {
  if (error instanceof DockerError || error instanceof StoreError) {
    return new RpcError(error.code, error.message, { details: error.details, cause: error });
  }
  return undefined;
}

async function removeStoreFiles(path: string): Promise<void> {
  for (const suffix of ["", "-wal", "-shm"]) {
    await Deno.remove(path + suffix).catch((error) => {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    });
  }
}

/** Starts the daemon and listens on `<runDir>/ployz.sock`. */
export async function startDaemon(options: DaemonOptions): Promise<Daemon> {
  const { layout } = options;
  const log = options.log ?? (() => {});
  const network = options.network ?? "ployz";
  await Deno.mkdir(layout.dataDir, { recursive: true });
  let { record } = await loadOrCreateMachine(layout.dataDir, options.defaultName);
  const key = await ensureKeyPair(layout.dataDir);
  const signingSecret = await ensureSigningSecret(layout.dataDir);
  const signingKey = signingPublicKey(signingSecret);
  if (record.public_key !== key.publicKey || record.signing_key !== signingKey) {
    record = { ...record, "public_key": key.publicKey, "signing_key": signingKey };
    await writeMachineFile(layout.dataDir, record);
  }
  const engine: Engine = openEngine({
    socketPath: layout.dockerSocket,
    machineId: record.id,
    network,
    extraLabels: options.extraLabels,
  });
  const stopping = new AbortController();
  // On every start, whatever the phase: the Observe Store holds no Membership state.
  const observe = startObserveRuntime({ layout: { dockerRoot: DEFAULT_LAYOUT.dockerRoot, ...layout }, log });
  let store: Store | undefined;
  let publisher: Publisher | undefined;
  let serving: ServingRuntime | undefined;
  let servingStart: Promise<void> | undefined;
  let capabilities: string[] = [];
  let link: ClusterLink | undefined;
  let catchingUp: Promise<void> | undefined;
  let networkProblem: string | undefined;
  let networkCheck: Promise<unknown> = Promise.resolve();
  const mesh = options.mesh;
  const endpoints = mesh === undefined ? [] : mesh.advertiseEndpoints ?? defaultEndpoints(
    Deno.networkInterfaces(),
    { port: mesh.listenPort, clusterNetwork: mesh.clusterNetwork, skipInterfaces: [mesh.interfaceName] },
  );
  // Serializes init with itself, so two concurrent calls found one Cluster.
  let initTail: Promise<unknown> = Promise.resolve();
  // Built once the handlers exist; the mesh listener may start before that and answers `unavailable` meanwhile.
  const served: { app?: RpcApp } = {};
  const meshRpc = meshRpcHandler({
    rows: () => store === undefined || store.closed ? [] : store.machines.list(),
    self: () => ({ id: record.id, name: record.name }),
    fetch: (request, signal) =>
      served.app?.fetch(request, signal) ??
        Response.json({ error: { code: "unavailable", message: "The daemon is starting", details: {} } }, {
          status: 503,
        }),
  });

  /** A Machine's Machine RPC listener on the mesh, from its replicated row. */
  function meshTarget(machineId: string): ForwardTarget | undefined {
    const row = store === undefined || store.closed ? undefined : store.machines.get(machineId);
    if (row?.subnet === undefined) return undefined;
    try {
      return { name: row.name, hostname: parseMachineSubnet(row.subnet).gateway, port: SYNC_PORT };
    } catch {
      return undefined;
    }
  }

  // Off the mesh Docker masquerades the network as usual; on it, the mesh firewall masquerades only what leaves
  // the Cluster network (lib/mesh's firewall), so Docker must not.
  function networkSpec(subnet: string): NetworkSpec {
    const { gateway } = parseMachineSubnet(subnet);
    return { name: network, subnet, gateway, dockerMasquerade: mesh === undefined };
  }

  function publishMachine(): void {
    if (store === undefined || record.cluster_id === undefined) return;
    store.machines.put({
      ...machineToWire(record),
      endpoints,
      capabilities,
      "daemon_version": options.daemonVersion,
    });
  }

  function participate(opened: Store): void {
    store = opened;
    publishMachine();
    publisher = startPublisher({ engine, store: opened, rescanMs: options.rescanMs, log });
    link = new ClusterLink({
      store: opened,
      settings: mesh,
      keyPath: keyPath(layout.dataDir),
      selfId: record.id,
      subnet: record.subnet!,
      hints: bootstrapHints(record),
      log,
      rpc: meshRpc,
    });
    link.start();
    networkCheck = watchMachineNetwork({
      engine,
      spec: networkSpec(record.subnet!),
      log,
      signal: stopping.signal,
    })
      .then((problem) => networkProblem = problem);
    startServing(opened);
    if (record.phase === "joining") catchingUp = catchUp(opened);
  }

  // Joining: sync with the bootstrap peers until this copy holds everything the first one answering held when
  // asked; only then does the Machine count as participating (it never acts on a stale copy as if complete).
  async function catchUp(opened: Store): Promise<void> {
    const agent = link?.agent;
    const peers = bootstrapHints(record).map((h) => link!.peerUrls().find((p) => p.machineId === h.machineId))
      .filter((p) => p !== undefined);
    if (agent === undefined || peers.length === 0) {
      log("joining: no mesh or no bootstrap peer; staying in phase joining");
      return;
    }
    let reported = "";
    while (!stopping.signal.aborted && !opened.closed && store === opened) {
      for (const peer of peers) {
        try {
          const target = await agent.peerVector(peer.url);
          for (let round = 0; round < 50 && !opened.caughtUpWith(target); round++) {
            await agent.syncOnce(peer.url);
          }
          if (!opened.caughtUpWith(target) || store !== opened) continue;
          const next: LocalMachine = { ...record, phase: "participating" };
          delete next.bootstrap_peers;
          await writeMachineFile(layout.dataDir, next);
          record = next;
          publishMachine();
          log(`caught up with ${peer.machineId}: participating`);
          startServing(opened);
          return;
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          if (message !== reported) log(`joining: ${message}`);
          reported = message;
        }
      }
      await sleep(500);
    }
  }

  /** Machines this Machine observes as Down, from its own membership judgement. */
  async function downSet(): Promise<ReadonlySet<string>> {
    if (store === undefined || store.closed || link === undefined) return new Set();
    const listed = listMachines({
      self: { id: record.id, name: record.name },
      rows: store.machines.list(),
      evidence: await link.evidence(),
      thresholds: mesh?.thresholds ?? DEFAULT_MEMBERSHIP_THRESHOLDS,
      now: Date.now(),
    });
    return new Set(listed.machines.filter((m) => m.membership === "down").map((m) => m.id));
  }

  // Serving infrastructure runs once the Machine participates: Internal DNS, the serving loop (dns.json, Caddy,
  // acks, retire) and the ingress driver. It outlives nothing of the daemon but the DNS unit under systemd.
  function startServing(opened: Store): void {
    if (serving !== undefined || servingStart !== undefined || record.phase !== "participating") return;
    const subnet = parseSubnet(record.subnet ?? "");
    if (subnet === undefined) return;
    servingStart = startServingRuntime({
      store: opened,
      engine,
      layout,
      gateway: subnet.gateway,
      network,
      record: () => ({ phase: record.phase, acceptsIngress: record.accepts_ingress !== false }),
      down: downSet,
      log,
    }).then(async (runtime) => {
      if (store !== opened || stopping.signal.aborted) await runtime.stop();
      else serving = runtime;
    }, (error) => log(`serving: cannot start: ${error instanceof Error ? error.message : String(error)}`))
      .finally(() => servingStart = undefined);
  }

  async function stopServing(): Promise<void> {
    await servingStart;
    const running = serving;
    serving = undefined;
    await running?.stop();
  }

  function servingStore(action: string): Store {
    if (store === undefined || store.closed || record.phase !== "participating") {
      throw new RpcError("conflict", `Cannot ${action} on Machine "${record.name}": it is ${record.phase}`, {
        details: { phase: record.phase },
      });
    }
    return store;
  }

  async function joinCluster(req: JoinRequest): Promise<LocalMachine> {
    const subnet = parseSubnet(req.subnet);
    if (subnet === undefined) {
      throw new RpcError("invalid_argument", `Invalid subnet "${req.subnet}": expected an IPv4 /24`, {
        details: { field: "subnet" },
      });
    }
    if (record.phase !== "uninitialized") {
      if (record.cluster_id === req.cluster_id && record.subnet === subnet.subnet) return record;
      throw new RpcError(
        "conflict",
        `Machine "${record.name}" is already ${record.phase} in Cluster "${record.cluster_name}" (id "${record.cluster_id}") with subnet "${record.subnet}"`,
        { details: { "cluster_id": record.cluster_id ?? "", phase: record.phase } },
      );
    }
    await engine.ensureNetwork(networkSpec(subnet.subnet));
    const path = storePath(layout.dataDir);
    await removeStoreFiles(path);
    const opened = openStore({ path, siteId: record.id, clusterId: req.cluster_id, signingSecret });
    // The join the operator ran vouches for the Machines the Entry Machine knows; later admissions chain from them.
    opened.addAnchors((req.members ?? []).map((m) => ({ id: m.id, signingKey: m.signing_key })));
    const next: LocalMachine = {
      ...record,
      name: req.machine_name ?? record.name,
      phase: "joining",
      "cluster_id": req.cluster_id,
      "cluster_name": req.cluster_name,
      subnet: subnet.subnet,
      "bootstrap_peers": req.peers,
    };
    try {
      await writeMachineFile(layout.dataDir, next);
    } catch (error) {
      opened.close();
      throw error;
    }
    record = next;
    participate(opened);
    log(`joining Cluster "${req.cluster_name}" (${req.cluster_id}) with subnet ${subnet.subnet}`);
    return record;
  }

  async function leaveCluster(req: LeaveRequest): Promise<LeaveResponse> {
    if (store === undefined || record.phase === "uninitialized") {
      throw new RpcError("conflict", `Machine "${record.name}" is not in a Cluster: nothing to leave`, {
        details: { phase: record.phase },
      });
    }
    const owned = await engine.listOwned({});
    if (owned.length > 0 && req.confirm_data_loss !== record.name) {
      const names = owned.map((c) => c.name);
      throw new RpcError(
        "conflict",
        `Machine "${record.name}" runs ${owned.length} Ployz container(s) (${names.slice(0, 5).join(", ")}${
          names.length > 5 ? ", …" : ""
        }): leaving removes them (Data Loss); confirm with the Machine's name`,
        { details: { containers: names, "machine_name": record.name } },
      );
    }
    await stopServing();
    await publisher?.stop();
    publisher = undefined;
    const removed: string[] = [];
    for (const c of owned) {
      await engine.removeContainer(c.id, { force: true });
      removed.push(c.name);
    }
    const opened = store;
    for (const row of opened.containers.list({ "machine_id": record.id })) opened.containers.delete(row.id);
    opened.machines.delete(record.id);
    const delivery = await link?.syncWithAll(5_000) ?? { delivered: [], failed: [] };
    await link?.stop();
    const interfaceRemoved = await link?.teardown() ?? false;
    link = undefined;
    store = undefined;
    opened.close();
    // Kept, not deleted: it is the only copy of what this Machine saw, and a later join starts a fresh one.
    const path = storePath(layout.dataDir);
    const aside = `${path}.left-${new Date().toISOString().replaceAll(":", "")}`;
    await Deno.rename(path, aside).catch(() => {});
    await removeStoreFiles(path);
    const next: LocalMachine = { id: record.id, name: record.name, phase: "uninitialized" };
    for (const k of ["public_key", "created_at"]) if (record[k] !== undefined) next[k] = record[k];
    await writeMachineFile(layout.dataDir, next);
    record = next;
    log(`left the Cluster; tombstone delivered to ${delivery.delivered.length} peer(s)`);
    return {
      "machine_id": record.id,
      "removed_containers": removed,
      "tombstone_delivered_to": delivery.delivered,
      "tombstone_not_delivered_to": delivery.failed,
      "interface_removed": interfaceRemoved,
    };
  }

  async function foundCluster(req: { clusterName?: string; machineName?: string; subnet?: string }) {
    const subnet = parseSubnet(req.subnet ?? DEFAULT_SUBNET);
    if (subnet === undefined) {
      throw new RpcError(
        "invalid_argument",
        `Invalid subnet "${req.subnet}": expected an IPv4 /24 such as "${DEFAULT_SUBNET}"`,
        {
          details: { field: "subnet" },
        },
      );
    }
    if (record.phase !== "uninitialized" && record.phase !== "participating") {
      throw new RpcError(
        "conflict",
        `Machine "${record.name}" is ${record.phase} in Cluster "${record.cluster_name}": it cannot found another`,
        { details: { phase: record.phase, "cluster_id": record.cluster_id ?? "" } },
      );
    }
    if (record.phase === "participating") {
      const clash = [
        ["cluster_name", req.clusterName, record.cluster_name],
        ["subnet", req.subnet === undefined ? undefined : subnet.subnet, record.subnet],
        ["machine_name", req.machineName, record.name],
      ].find(([, asked, held]) => asked !== undefined && asked !== held);
      if (clash === undefined) return record;
      const [field, asked, held] = clash;
      throw new RpcError(
        "conflict",
        `Machine "${record.name}" already belongs to Cluster "${record.cluster_name}" (id "${record.cluster_id}"): ${field} is "${held}", not "${asked}"`,
        { details: { field, "cluster_id": record.cluster_id ?? "" } },
      );
    }
    await engine.ensureNetwork(networkSpec(subnet.subnet));
    const clusterId = mintId();
    const path = storePath(layout.dataDir);
    // An uninitialized Machine has never replicated anything: a store file here is left by an init that failed
    // before the record was written, and belongs to a Cluster that was never founded.
    await removeStoreFiles(path);
    const opened = openStore({ path, siteId: record.id, clusterId, signingSecret });
    opened.admit(record.id, signingKey);
    const next: LocalMachine = {
      ...record,
      name: req.machineName ?? record.name,
      phase: "participating",
      "cluster_id": clusterId,
      "cluster_name": req.clusterName ?? "default",
      subnet: subnet.subnet,
    };
    try {
      await writeMachineFile(layout.dataDir, next);
    } catch (error) {
      opened.close();
      throw error;
    }
    record = next;
    participate(opened);
    log(`founded Cluster "${next.cluster_name}" (${clusterId}) with subnet ${subnet.subnet}`);
    return record;
  }

  const baseHandlers = buildHandlers({
    record: () => record,
    engine,
    network,
    daemonVersion: options.daemonVersion,
    stopping: stopping.signal,
    serving: () => serving,
    filesDir: join(layout.dataDir, "files"),
    init(req): Promise<LocalMachine> {
      const run = initTail.then(() => foundCluster(req));
      initTail = run.catch(() => {});
      return run;
    },
  });
  const handlers: RpcHandlers = {
    ...baseHandlers,
    async status(req, ctx) {
      const [status, observed] = await Promise.all([baseHandlers.status!(req, ctx), observe.state()]);
      return { ...status, observe: observed };
    },
    setPointer(req) {
      const { pointer, previous } = setServingPointer(servingStore("set a Serving Pointer"), req);
      return Promise.resolve(previous === undefined ? { pointer } : { pointer, previous });
    },
    pointerStatus(req) {
      return Promise.resolve(pointerStatus(servingStore("read a Serving Pointer"), req, serving?.down()));
    },
    ...observeHandlers({
      record: () => record,
      observeSocket: join(layout.runDir, "observe.sock"),
      stopping: stopping.signal,
    }),
    async listMachines() {
      const rows = store === undefined || store.closed ? [] : store.machines.list();
      const evidence = link === undefined
        ? { handshakes: new Map(), traffic: new Map(), received: new Map() }
        : await link.evidence();
      const members = store === undefined || store.closed ? [] : store.members.list();
      return {
        ...listMachines({
          self: { id: record.id, name: record.name },
          rows,
          evidence,
          thresholds: mesh?.thresholds ?? DEFAULT_MEMBERSHIP_THRESHOLDS,
          now: Date.now(),
          meshError: link === undefined
            ? "this Machine is not in a Cluster"
            : [link.meshError, networkProblem].filter((e) => e !== undefined).join("; ") || undefined,
        }),
        members: members.map((m) => ({ id: m.machine_id, "signing_key": m.signing_key })),
      };
    },
    async admitPeer(req) {
      if (link === undefined || record.phase !== "participating") {
        throw new RpcError(
          "conflict",
          `Machine "${record.name}" cannot admit a peer: it is ${record.phase}`,
          {
            details: { phase: record.phase },
          },
        );
      }
      if (req.signing_key !== undefined) store?.admit(req.machine_id, req.signing_key);
      const result = await link.admit({
        machineId: req.machine_id,
        publicKey: req.public_key,
        subnet: req.subnet,
        endpoints: req.endpoints ?? [],
      });
      return { "machine_id": record.id, ...result };
    },
    async joinMachine(req) {
      const run = initTail.then(() => joinCluster(req));
      initTail = run.catch(() => {});
      const joined = await run;
      return { machine: machineToWire(joined), endpoints };
    },
    leaveMachine(req) {
      const run = initTail.then(() => leaveCluster(req));
      initTail = run.catch(() => {});
      return run;
    },
  };
  const forwarder = createForwarder({
    self: () => ({ id: record.id, name: record.name }),
    resolve: meshTarget,
    async observe(machineId): Promise<string> {
      const listed = await handlers.listMachines!({}, { capability: "", signal: stopping.signal });
      const m = listed.machines.find((x) => x.id === machineId);
      if (m === undefined) return `"${record.name}" holds no row for it`;
      const handshake = m.last_handshake_at === undefined
        ? "no WireGuard handshake seen"
        : `last handshake ${m.last_handshake_at} (${
          Math.round((Date.now() - Date.parse(m.last_handshake_at)) / 1000)
        } s ago)`;
      return `"${record.name}" observes it ${m.membership}, ${handshake}`;
    },
    local: (request, signal) => served.app!.fetch(request, signal),
  });
  Object.assign(
    handlers,
    {
      forward: (req, ctx) => forwardJson(forwarder, req, ctx.signal),
    } satisfies RpcHandlers,
    imageHandlers({
      engine,
      self: () => ({ id: record.id, name: record.name }),
      resolve: meshTarget,
      stopping: stopping.signal,
      log,
    }),
    execHandlers({ engine, dockerSocket: layout.dockerSocket, stopping: stopping.signal, log }),
  );
  // Upgrades over RPC, and the interlock: mutations are counted and refused while an upgrade attempt runs.
  const upgradeHost: UpgradeHost = {
    paths: { ...DEFAULT_INSTALL_PATHS, layout: { ...DEFAULT_INSTALL_PATHS.layout, ...layout } },
    gate: new MutationGate(),
    machineName: () => record.name,
  };
  Object.assign(
    handlers,
    guardMutations(handlers, upgradeHost, [...MUTATING_ROUTES, "pullImageFromPeer"]),
    upgradeHandlers(upgradeHost),
  );
  // The base handlers advertise only themselves; the contract names every route this daemon serves.
  handlers.describeContract = async (req, ctx) => ({
    ...await baseHandlers.describeContract!(req, ctx),
    capabilities: advertisedCapabilities(handlers),
  });
  capabilities = advertisedCapabilities(handlers);

  if (
    (record.phase === "participating" || record.phase === "joining") && record.cluster_id !== undefined
  ) {
    participate(
      openStore({
        path: storePath(layout.dataDir),
        siteId: record.id,
        clusterId: record.cluster_id,
        signingSecret,
      }),
    );
  }

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
    await stopServing();
    await publisher?.stop();
    await link?.stop();
    store?.close();
    await observe.close();
    throw error;
  }

  let stopped: Promise<void> | undefined;
  async function stop(): Promise<void> {
    stopped ??= (async () => {
      stopping.abort();
      await server.shutdown();
      await stopServing();
      await publisher?.stop();
      await link?.stop();
      await catchingUp;
      await networkCheck;
      store?.close();
      // A runtime unit keeps running; a spawned child ends with the daemon.
      await observe.close();
    })();
    await stopped;
  }

  return {
    get machine(): LocalMachine {
      return record;
    },
    socketPath,
    get participating(): boolean {
      return store !== undefined;
    },
    rescan: () => publisher?.rescan() ?? Promise.resolve(),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

function bootstrapHints(record: LocalMachine): PeerHint[] {
  const peers = record.bootstrap_peers;
  if (!Array.isArray(peers)) return [];
  return peers.flatMap((p) => {
    if (p === null || typeof p !== "object") return [];
    const { id, "public_key": publicKey, subnet, endpoints } = p as Record<string, unknown>;
    if (typeof id !== "string" || typeof publicKey !== "string" || typeof subnet !== "string") return [];
    return [{
      machineId: id,
      publicKey,
      subnet,
      endpoints: Array.isArray(endpoints) ? endpoints.filter((e): e is string => typeof e === "string") : [],
    }];
  });
}
