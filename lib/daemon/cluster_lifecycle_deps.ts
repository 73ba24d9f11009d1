/**
 * What the Cluster lifecycle acts through (the daemon passes the real ones, unit tests small fakes): the Cluster
 * link's port, the runtimes it starts and stops, and the requests it takes.
 *
 * @module
 */

import type { Engine, NetworkSpec } from "../deploy/machine/mod.ts";
import type { MembershipThresholds } from "../mesh/mod.ts";
import type { Machine, Store, VersionVector } from "../store/mod.ts";
import type { PeerHint } from "./cluster_link.ts";
import type { LocalMachine } from "./machine_file.ts";
import type { PeerEvidence } from "./peer_evidence.ts";
import type { MachineSubnet } from "./subnet.ts";

/** The Cluster link as the lifecycle uses it (`ClusterLink` in the daemon). */
export interface LinkPort {
  /** Store sync with peers; `undefined` without a mesh. */
  readonly agent:
    | { peerVector(url: string): Promise<VersionVector>; syncOnce(url: string): Promise<unknown> }
    | undefined;
  /** Why the mesh is not working, if it is not. */
  readonly meshError: string | undefined;
  /** Starts the link in the background; resolves (never rejects) once its first bring-up was tried. */
  start(): Promise<void>;
  stop(): Promise<void>;
  teardown(): Promise<boolean>;
  peerUrls(): { machineId: string; url: string }[];
  evidence(): Promise<PeerEvidence>;
  syncWithAll(timeoutMs: number): Promise<{ delivered: string[]; failed: string[] }>;
  admit(hint: PeerHint): Promise<{ configured: boolean; error?: string }>;
}

/** Something the lifecycle starts while the Machine is in a Cluster and stops when it leaves. */
export interface Stoppable {
  stop(): Promise<void>;
}

/** What the lifecycle acts through; the daemon passes the real ones, unit tests small fakes. */
export interface LifecycleDeps<S extends Stoppable = Stoppable> {
  /** Holds `machine.json` and `store.db`. */
  dataDir: string;
  /** The Machine's Docker bridge network for its subnet. */
  networkSpec(subnet: string): NetworkSpec;
  /**
   * Keeps the bridge network as the Machine needs it while it is in a Cluster, until `signal` aborts; resolves
   * with a problem to report (in the membership list's mesh error), if any.
   */
  watchNetwork(spec: NetworkSpec, signal: AbortSignal): Promise<string | undefined>;
  /** Docker, for the bridge network and for removing this Machine's containers on leave. */
  engine: Pick<Engine, "ensureNetwork" | "listOwned" | "removeContainer">;
  /** Membership thresholds for the Down judgement. */
  thresholds: MembershipThresholds;
  /** One line per notable event. */
  log(line: string): void;
  /** Opens this Machine's copy of the Cluster's store. */
  openStore(path: string, siteId: string, clusterId: string): Store;
  /** The row this Machine publishes about itself. */
  machineRow(record: LocalMachine): Machine;
  /** Builds (not starts) the Cluster link for the record's Cluster. */
  openLink(store: Store, record: LocalMachine, hints: PeerHint[]): LinkPort;
  /** Starts publishing this Machine's containers into the store. */
  startPublisher(store: Store): Stoppable & { rescan(): Promise<void> };
  /** Starts serving infrastructure (Internal DNS, the serving loop, ingress) for a participating Machine. */
  startServing(store: Store, subnet: MachineSubnet): Promise<S>;
  /** Longest pause between catch-up rounds (the first ones are shorter); default 500 ms. */
  catchUpPauseMs?: number;
  /**
   * Probes another Machine's RPC over the mesh, bounded by `signal`: any answer at all (even a refusal) proves
   * its daemon alive. Absent: every probe counts as unanswered.
   */
  probePeer?(machineId: string, signal: AbortSignal): Promise<boolean>;
}

/** What `found` asks for; every field has a default. */
export interface FoundRequest {
  clusterName?: string;
  machineName?: string;
  subnet?: string;
}
