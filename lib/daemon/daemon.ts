/**
 * `startDaemon`: the Machine daemon's lifecycle. On start it reads (or mints) the local Machine record and key
 * pair, reopens the replicated store when the Machine participates, starts the publisher, and serves Machine RPC
 * on `<runDir>/ployz.sock`. `stop` ends long calls, closes the server, the publisher, the store, and removes the
 * socket.
 *
 * @module
 */

import { join } from "node:path";
import { DockerError, type Engine, openEngine } from "../deploy/mod.ts";
import {
  advertisedCapabilities,
  createRpcApp,
  isRpcErrorCode,
  listenUnix,
  RpcError,
  type RpcErrorCode,
  type SocketServer,
} from "../rpc/mod.ts";
import { openStore, type Store, StoreError } from "../store/mod.ts";
import { buildHandlers, machineToWire } from "./handlers.ts";
import { mintId } from "./ids.ts";
import { ensureKeyPair } from "./keys.ts";
import { loadOrCreateMachine, type LocalMachine, writeMachineFile } from "./machine_file.ts";
import { type Publisher, startPublisher } from "./publisher.ts";
import { DEFAULT_SUBNET, parseSubnet } from "./subnet.ts";

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
    const code: RpcErrorCode = isRpcErrorCode(error.code) ? error.code : "internal";
    const details = "details" in error && error.details !== undefined ? { ...error.details } : {};
    return new RpcError(code, error.message, { details, cause: error });
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
  if (record.public_key !== key.publicKey) {
    record = { ...record, "public_key": key.publicKey };
    await writeMachineFile(layout.dataDir, record);
  }
  const engine: Engine = openEngine({
    socketPath: layout.dockerSocket,
    machineId: record.id,
    network,
    extraLabels: options.extraLabels,
  });
  const stopping = new AbortController();
  let store: Store | undefined;
  let publisher: Publisher | undefined;
  let capabilities: string[] = [];
  // Serializes init with itself, so two concurrent calls found one Cluster.
  let initTail: Promise<unknown> = Promise.resolve();

  function publishMachine(): void {
    if (store === undefined || record.cluster_id === undefined) return;
    store.machines.put({
      ...machineToWire(record),
      capabilities,
      "daemon_version": options.daemonVersion,
    });
  }

  function participate(opened: Store): void {
    store = opened;
    publishMachine();
    publisher = startPublisher({ engine, store: opened, rescanMs: options.rescanMs, log });
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
    await engine.ensureNetwork({ name: network, subnet: subnet.subnet, gateway: subnet.gateway });
    const clusterId = mintId();
    const path = storePath(layout.dataDir);
    // An uninitialized Machine has never replicated anything: a store file here is left by an init that failed
    // before the record was written, and belongs to a Cluster that was never founded.
    await removeStoreFiles(path);
    const opened = openStore({ path, siteId: record.id, clusterId });
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

  const handlers = buildHandlers({
    record: () => record,
    engine,
    dockerSocket: layout.dockerSocket,
    daemonVersion: options.daemonVersion,
    stopping: stopping.signal,
    init(req): Promise<LocalMachine> {
      const run = initTail.then(() => foundCluster(req));
      initTail = run.catch(() => {});
      return run;
    },
  });
  capabilities = advertisedCapabilities(handlers);

  if (record.phase === "participating" && record.cluster_id !== undefined) {
    participate(
      openStore({ path: storePath(layout.dataDir), siteId: record.id, clusterId: record.cluster_id }),
    );
  }

  const app = createRpcApp(handlers, {
    toRpcError,
    onInternalError: (capability, error) =>
      log(
        `internal error serving "${capability}": ${error instanceof Error ? error.message : String(error)}`,
      ),
  });
  const socketPath = join(layout.runDir, "ployz.sock");
  let server: SocketServer;
  try {
    server = await listenUnix({ path: socketPath }, app.fetch);
  } catch (error) {
    await publisher?.stop();
    store?.close();
    throw error;
  }

  let stopped: Promise<void> | undefined;
  async function stop(): Promise<void> {
    stopped ??= (async () => {
      stopping.abort();
      await server.shutdown();
      await publisher?.stop();
      store?.close();
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
