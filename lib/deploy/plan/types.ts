/**
 * The Deploy Plan: an ordered list of operations on named Machines, computed from a Deploy Intent and a
 * Snapshot, plus what the Preview shows beside it (warnings, Data Loss, what was not observed).
 *
 * @module
 */

import type { ContainerSpec } from "../docker/spec.ts";
import type { SpecChange } from "../compose/spec.ts";
import type { VolumePlacement } from "./volume_locality.ts";

/** A container an operation acts on, as observed. */
export interface ContainerRef {
  /** Docker id. */
  id: string;
  /** Container name. */
  name: string;
}

/** The health gate a new or started container must pass. */
export interface HealthGate {
  /** Give up after this long (start_period + (interval + timeout) × retries + 5 s). */
  deadlineMs: number;
  /** The container must stay up this long first. */
  monitorMs: number;
}

/** What every operation carries. */
export interface OpBase {
  /** Position in the plan, from 0. */
  index: number;
  /** Machine the operation runs on. */
  machineId: string;
  /** Its name, for people. */
  machineName: string;
  /** Project. */
  project: string;
  /** Service. */
  service: string;
  /** Slot, or `hook` for a pre-deploy hook. */
  slot: string;
}

/** Create and start a container for an empty slot, then gate on its health. */
export interface CreateOp extends OpBase {
  /** Discriminant. */
  kind: "create";
  /** What to create. */
  spec: ContainerSpec;
  /** The gate, or null to skip it. */
  health: HealthGate | null;
}

/** Replace an existing container with a new one. */
export interface ReplaceOp extends OpBase {
  /** Discriminant. */
  kind: "replace";
  /** The container being replaced. */
  old: ContainerRef;
  /** What replaces it. */
  spec: ContainerSpec;
  /** start-first keeps the old one serving until the new one is healthy; stop-first frees its ports first. */
  order: "start-first" | "stop-first";
  /** Why the order was chosen. */
  orderReason: string;
  /**
   * How many of the Service's replacements run at once (`update_config.parallelism`; 0: all of them): each
   * waits for the one that many places before it. Absent: 1, one after another.
   */
  parallelism?: number;
  /** How long it waits once the replacement it rolls after completed (`update_config.delay`); absent: 0. */
  delayMs?: number;
  /**
   * Who stops the old container: `client` (this Deploy, after the new one passed health; always for stop-first)
   * or `retire_loop` (start-first under a Serving Pointer: the old Machine's retire loop stops it once every
   * Machine not Down acked the moved pointer, so it leaves every Ingress Proxy first).
   */
  oldStop: "client" | "retire_loop";
  /** How the old container relates to the desired spec. */
  change: SpecChange;
  /** Fields that changed, when the Saved State could tell. */
  changed: string[];
  /** The gate. */
  health: HealthGate | null;
}

/** Start an existing container that already has the desired spec, then gate on its health. */
export interface StartOp extends OpBase {
  /** Discriminant. */
  kind: "start";
  /** The container. */
  container: ContainerRef;
  /** The gate. */
  health: HealthGate | null;
}

/** Stop a container and keep it. */
export interface StopOp extends OpBase {
  /** Discriminant. */
  kind: "stop";
  /** The container. */
  container: ContainerRef;
}

/** Stop and remove a container. */
export interface RemoveOp extends OpBase {
  /** Discriminant. */
  kind: "remove";
  /** The container. */
  container: ContainerRef;
  /**
   * `scale_down`, `obsolete_service`, `duplicate` (a second container in one slot), `superseded` (a stopped old
   * container beside its UpToDate replacement, e.g. one a retire loop stopped) or `requested`.
   */
  reason: "scale_down" | "obsolete_service" | "duplicate" | "superseded" | "requested" | "ineligible";
}

/** Run a Service's `x-pre_deploy` hook to completion before its containers change. */
export interface HookOp extends OpBase {
  /** Discriminant. */
  kind: "hook";
  /** The hook container. */
  spec: ContainerSpec;
  /** How long the hook may run. */
  timeoutMs: number;
  /** Earlier hook containers of this Service, removed before this one runs (a failed one was evidence). */
  previous: ContainerRef[];
}

/** Move a Service's Serving Pointer to the Deployment its containers now carry, once they all passed health. */
export interface PointOp extends OpBase {
  /** Discriminant. */
  kind: "point";
  /** The Deployment that serves from now on. */
  deployment: string;
}

/** Fill a Machine's Ingress Proxy slot: start a stopped one or create one; never replace or remove one. */
export interface IngressOp extends OpBase {
  /** Discriminant. */
  kind: "ingress";
  /** `create` when the Snapshot saw no Ingress Proxy on the Machine, `start` when it saw none running. */
  action: "create" | "start";
  /** The Deployment recorded on a created Ingress Proxy. */
  deployment: string;
}

/**
 * Fetch an image the Machine lacks from a peer Machine that the Snapshot saw holding it, over the mesh, before
 * the first operation on the Machine that needs it (`ployz.image.pull_from_peer.v1`).
 */
export interface ImageOp extends OpBase {
  /** Discriminant. */
  kind: "image";
  /** Image reference. */
  ref: string;
  /** The peer Machine that holds it. */
  fromMachineId: string;
  /** Its name, for people. */
  fromMachineName: string;
  /** Why a peer and not the registry, when the image has a registry. */
  reason?: string;
}

/**
 * Pull a pinned image from its registry on the Machine that lacks it, before the first operation there that needs
 * it (`ployz.image.pull.v1`, a bounded task on that Machine; credentials travel with each request).
 */
export interface PullOp extends OpBase {
  /** Discriminant. */
  kind: "pull";
  /** Image reference, pinned to a digest. */
  ref: string;
  /** Its registry host. */
  registry: string;
  /** Why the registry and not a peer. */
  reason: string;
}

/** One step of a plan. */
export type Op =
  | CreateOp
  | ReplaceOp
  | StartOp
  | StopOp
  | RemoveOp
  | HookOp
  | PointOp
  | IngressOp
  | ImageOp
  | PullOp;

/**
 * Where a Deploy's image comes from, decided before planning: the registry's digest (or the digest a Machine
 * holds), and whether the registry answered.
 */
export interface ImageSource {
  /** The reference as written in the Compose file. */
  written: string;
  /** What every Machine runs: `written` pinned to `digest`, or `written` when it has no registry digest. */
  ref: string;
  /** The digest every Machine runs, if known. */
  digest?: string;
  /** Where the digest came from, for people: `registry "reg:5000"`, `Machine "m1"`, `the Compose file`. */
  from: string;
  /** Registry host. */
  registry: string;
  /** `available` when the registry served the digest at plan time, `unreachable` when it did not answer, `none` when the image has no registry identity (built or loaded here). */
  registryState: "available" | "unreachable" | "none";
  /** Why the registry was not used, when it was not. */
  registryMessage?: string;
  /** Services that use it. */
  services: string[];
}

/** One named thing an operation destroys; confirmed only by naming it exactly. */
export interface DataLoss {
  /** The exact name to confirm, e.g. `shop/db`. */
  name: string;
  /** What is lost, in one sentence. */
  reason: string;
}

/** Per Service: how its slots compare with the desired spec. */
export interface ServiceSummary {
  /** Service. */
  service: string;
  /** Desired container count. */
  desired: number;
  /** Slots already UpToDate and running. */
  upToDate: number;
  /** Slots created, replaced or started. */
  changing: number;
  /** Containers removed. */
  removing: number;
}

/** A plan and what its Preview shows. */
export interface Plan {
  /** The Deployment this plan creates containers for. */
  deploymentId: string;
  /** Project. */
  project: string;
  /** Operations in execution order. */
  ops: Op[];
  /**
   * Each Service of the Deploy with the Services it names in `depends_on`: the executor runs the operations of
   * Services with no `depends_on` path between them side by side. Absent: every Service waits for those before it.
   */
  dependsOn?: Record<string, string[]>;
  /** Things the operator should read before confirming. */
  warnings: string[];
  /** What the plan destroys. */
  dataLoss: DataLoss[];
  /** The images this Deploy pinned, and where each comes from. */
  images?: ImageSource[];
  /** Per Service counts. */
  services: ServiceSummary[];
  /** Containers observed for this Project, across every observed Machine. */
  observedContainers: number;
  /** When the Snapshot was taken, ISO 8601. */
  observedAt: string;
  /** Services placed on the Machine holding their Provisioned Volumes' Writer. */
  volumePlacements?: VolumePlacement[];
}
