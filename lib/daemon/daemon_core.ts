/**
 * What every part of the daemon shares, opened first: the local Machine record and its keys, this Machine's Docker,
 * the Observe Store runtime, the Advertised Endpoints, the stop signal and the leaving marks. The Cluster lifecycle
 * (daemon_lifecycle.ts), the route groups (daemon_routes.ts) and the socket (daemon.ts) are built over it.
 *
 * @module
 */

import { type Engine, openEngine } from "../deploy/machine/mod.ts";
import { defaultEndpoints } from "../mesh/mod.ts";
import { DEFAULT_LAYOUT } from "../permissions/mod.ts";
import { signingPublicKey } from "../store/mod.ts";
import { ensureKeyPair, ensureSigningSecret } from "./keys.ts";
import { loadOrCreateMachine, type LocalMachine, writeMachineFile } from "./machine_file.ts";
import type { MeshSettings } from "./mesh_settings.ts";
import { type ObserveRuntime, startObserveRuntime } from "./observe_runtime.ts";

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

/** What the parts of a running daemon share; opened by {@link openDaemonCore}. */
export interface DaemonCore {
  readonly layout: DaemonPaths;
  readonly mesh: MeshSettings | undefined;
  readonly daemonVersion: string;
  readonly rescanMs: number | undefined;
  readonly log: (line: string) => void;
  /** The Machine's Docker bridge network name. */
  readonly network: string;
  /** The local record as read (or minted) at start; the lifecycle keeps it current from then on. */
  readonly record: LocalMachine;
  /** The secret the Machine's store signs its changes with. */
  readonly signingSecret: Uint8Array;
  readonly engine: Engine;
  /** Aborts when the daemon stops, so long calls end. */
  readonly stopping: AbortController;
  /** Containers a client asked to leave every proxy before it stops them (daemon memory: a restart forgets them). */
  readonly leavingMarks: Map<string, string>;
  readonly observe: ObserveRuntime;
  /** The Advertised Endpoints of this Machine's row. */
  readonly endpoints: string[];
}

/** Reads (or mints) the record and keys, opens Docker and starts the Observe Store runtime. */
export async function openDaemonCore(options: DaemonOptions): Promise<DaemonCore> {
  const { layout, mesh } = options;
  const log = options.log ?? (() => {});
  const network = options.network ?? "ployz";
  const { record, signingSecret } = await loadRecord(layout.dataDir, options.defaultName);
  const engine = openEngine({
    socketPath: layout.dockerSocket,
    machineId: record.id,
    network,
    extraLabels: options.extraLabels,
  });
  // On every start, whatever the phase: the Observe Store holds no Membership state.
  const observe = startObserveRuntime({ layout: { dockerRoot: DEFAULT_LAYOUT.dockerRoot, ...layout }, log });
  const endpoints = mesh === undefined ? [] : mesh.advertiseEndpoints ?? defaultEndpoints(
    Deno.networkInterfaces(),
    { port: mesh.listenPort, clusterNetwork: mesh.clusterNetwork, skipInterfaces: [mesh.interfaceName] },
  );
  return {
    layout,
    mesh,
    daemonVersion: options.daemonVersion,
    rescanMs: options.rescanMs,
    log,
    network,
    record,
    signingSecret,
    engine,
    stopping: new AbortController(),
    leavingMarks: new Map(),
    observe,
    endpoints,
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
