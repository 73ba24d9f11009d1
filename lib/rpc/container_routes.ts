/**
 * Container routes of Machine RPC: listing the Machine's Ployz-owned containers, ensuring one from a spec,
 * starting, stopping and removing it, and the health gate. Requests ignore fields they do not know and are strict
 * on the types of those they do; responses are tolerant (docs/rpc.md, rules 2 and 3).
 *
 * @module
 */

import * as z from "zod";
import { route, type RouteTable } from "./route.ts";

const text = z.string().max(4096);
const id = z.string().min(1).max(256);
const maybeText = z.string().max(4096).nullable();

/** A published port of an observed container. */
export interface ObservedPortWire {
  /** Port inside the container. */
  "container_port": number;
  /** `tcp` or `udp`. */
  protocol: string;
  /** Host address bound; empty for all. */
  "host_ip": string;
  /** Port on the host. */
  "host_port": number;
}

/** One Ployz-owned container as its Machine observed it. Environment values never appear, only names. */
export interface ObservedContainerWire {
  /** Docker's container id. */
  id: string;
  /** Container name. */
  name: string;
  /** Project (label `ployz.project`). */
  project: string;
  /** Service (label `ployz.service`). */
  service: string;
  /** Deployment (label `ployz.deployment`). */
  deployment: string;
  /** Slot within the Service (label `ployz.slot`). */
  slot: string;
  /** The key its creator minted; a retried ensure finds the container by it. */
  "creation_key": string;
  /** Digest of the spec it was created from. */
  "spec_digest": string;
  /** Image reference it was created from. */
  image: string;
  /** Id of the image it runs. */
  "image_id": string;
  /** Docker's state (`created`, `running`, `exited`…). */
  state: string;
  /** Health: `none`, `starting`, `healthy`, `unhealthy`. */
  health: string;
  /** When it last started. */
  "started_at": string | null;
  /** Exit code once stopped. */
  "exit_code": number | null;
  /** Docker's record of its last failed start. */
  "start_error": string | null;
  /** Its addresses on the Machine network. */
  addresses: string[];
  /** Published ports. */
  ports: ObservedPortWire[];
  /** Environment variable names; values stay on the Machine. */
  "env_names": string[];
  /** When Docker created it. */
  "created_at": string | null;
}

/** Tolerant reader of {@link ObservedContainerWire}. */
export const ObservedContainerSchema: z.ZodType<ObservedContainerWire> = z.lazy(() =>
  z.looseObject({
    id,
    name: text,
    project: text,
    service: text,
    deployment: text,
    slot: text,
    "creation_key": text,
    "spec_digest": text,
    image: text,
    "image_id": text,
    state: z.string().max(64),
    health: z.string().max(64),
    "started_at": maybeText,
    "exit_code": z.number().int().nullable(),
    "start_error": maybeText,
    addresses: z.array(z.string().max(64)).max(64),
    ports: z.array(z.looseObject({
      "container_port": z.number().int(),
      protocol: z.string().max(16),
      "host_ip": z.string().max(64),
      "host_port": z.number().int(),
    })).max(1024),
    "env_names": z.array(z.string().max(1024)).max(4096),
    "created_at": maybeText,
  })
);

/** What `ployz.container.list.v1` asks: label filters, each optional. */
export interface ListContainersRequest {
  /** Only this Project. */
  project?: string;
  /** Only this Service. */
  service?: string;
  /** Only this Deployment. */
  deployment?: string;
}

/** Reader of {@link ListContainersRequest}; fields it does not know are ignored. */
export const ListContainersRequestSchema: z.ZodType<ListContainersRequest> = z.lazy(() =>
  z.object({
    project: z.string().min(1).max(256).optional(),
    service: z.string().min(1).max(256).optional(),
    deployment: z.string().min(1).max(256).optional(),
  })
);

/** What `ployz.container.list.v1` answers. */
export interface ListContainersResponse {
  /** The observing Machine. */
  "machine_id": string;
  /** When the observation was made, ISO 8601. */
  "observed_at": string;
  /** Every Ployz-owned container matching the filters. */
  containers: ObservedContainerWire[];
}

/** Tolerant reader of {@link ListContainersResponse}. */
export const ListContainersResponseSchema: z.ZodType<ListContainersResponse> = z.lazy(() =>
  z.looseObject({
    "machine_id": id,
    "observed_at": text,
    containers: z.array(ObservedContainerSchema),
  })
);

/**
 * The container spec of an ensure: lib/deploy's `ContainerSpec` document (camelCase inside). This layer only
 * requires an object; the daemon validates it with lib/deploy's own rules.
 */
export interface ContainerSpecDocument {
  /** The Docker container name. */
  name: string;
  /** Minted once per intended container; a retry with the same key finds the first one. */
  creationKey: string;
  /** Image reference; it must already be on the Machine. */
  image: string;
}

/** What `ployz.container.ensure.v1` asks; `S` lets a caller pass its own spec type unchanged. */
export interface EnsureContainerRequest<S extends ContainerSpecDocument = ContainerSpecDocument> {
  /** The container to find by creation key, or create. */
  spec: S;
  /** Start it (when not running) after finding or creating it. */
  start: boolean;
}

/** Reader of {@link EnsureContainerRequest}; the spec is a Ployz document validated by the daemon. */
export const EnsureContainerRequestSchema: z.ZodType<EnsureContainerRequest> = z.lazy(() =>
  z.object({
    spec: z.looseObject({ name: z.string(), creationKey: z.string(), image: z.string() }),
    start: z.boolean(),
  })
);

/**
 * What `ployz.container.ensure_with_files.v1` asks: an ensure whose spec ships files (Compose secrets, configs,
 * relative binds), with their content (base64) by `sha256:` digest. A route of its own, not a field of
 * `ensure.v1`: a daemon that ignored the field would create the container without its files. Content is never
 * logged or answered back.
 */
export interface EnsureContainerWithFilesRequest<S extends ContainerSpecDocument = ContainerSpecDocument>
  extends EnsureContainerRequest<S> {
  /** Content by digest; only the files the spec names, and a copy the Machine already holds may be left out. */
  files: Record<string, string>;
}

/** Reader of {@link EnsureContainerWithFilesRequest}. */
export const EnsureContainerWithFilesRequestSchema: z.ZodType<EnsureContainerWithFilesRequest> = z.lazy(() =>
  z.object({
    spec: z.looseObject({ name: z.string(), creationKey: z.string(), image: z.string() }),
    start: z.boolean(),
    files: z.record(z.string().regex(/^sha256:[0-9a-f]{64}$/), z.string()),
  })
);

/** What `ployz.container.ensure.v1` answers. */
export interface EnsureContainerResponse {
  /** The container, observed after the call. */
  container: ObservedContainerWire;
  /** False when the creation key already named a container. */
  created: boolean;
  /** True when this call started it. */
  started: boolean;
}

/** Tolerant reader of {@link EnsureContainerResponse}. */
export const EnsureContainerResponseSchema: z.ZodType<EnsureContainerResponse> = z.lazy(() =>
  z.looseObject({
    container: ObservedContainerSchema,
    created: z.boolean(),
    started: z.boolean(),
  })
);

/** A request naming one container by id or name. */
export interface ContainerRefRequest {
  /** Docker id or container name. */
  id: string;
}

/** Reader of {@link ContainerRefRequest}; fields it does not know are ignored. */
export const ContainerRefRequestSchema: z.ZodType<ContainerRefRequest> = z.lazy(() => z.object({ id }));

/** What `ployz.container.stop.v1` asks. */
export interface StopContainerRequest {
  /** Docker id or container name. */
  id: string;
  /** Seconds between the stop signal and the kill; default the container's own. */
  "grace_seconds"?: number;
}

/** Reader of {@link StopContainerRequest}; fields it does not know are ignored. */
export const StopContainerRequestSchema: z.ZodType<StopContainerRequest> = z.lazy(() =>
  z.object({
    id,
    "grace_seconds": z.number().int().min(0).max(3600).optional(),
  })
);

/** What `ployz.container.leave.v1` asks: take a container out of every proxy before the caller stops it. */
export interface LeaveContainerRequest {
  /** Docker id or container name. */
  id: string;
  /** The caller's patience: how long to wait for every Machine not Down to ack, in ms (0 to 60 000). */
  "wait_ms": number;
}

/** Reader of {@link LeaveContainerRequest}; fields it does not know are ignored. */
export const LeaveContainerRequestSchema: z.ZodType<LeaveContainerRequest> = z.lazy(() =>
  z.object({
    id,
    "wait_ms": z.number().int().min(0).max(60_000),
  })
);

/** What `ployz.container.leave.v1` answers: this Machine's view of the leave acks when it stopped waiting. */
export interface LeaveContainerResponse {
  /** The container's Docker id. */
  id: string;
  /** False when it did not run: nothing to leave. */
  live: boolean;
  /** Machines (ids) whose proxies dropped it. */
  acked: string[];
  /** Machines not Down whose ack had not arrived when the wait ended. */
  missing: string[];
  /** How long the Machine waited. */
  "waited_ms": number;
  /** How long it then drained the requests already in flight to the container; absent from older Machines. */
  "drained_ms"?: number;
  /** Connections to the container still open when the drain ended: 0 when drained. */
  "in_flight"?: number;
}

/** Tolerant reader of {@link LeaveContainerResponse}. */
export const LeaveContainerResponseSchema: z.ZodType<LeaveContainerResponse> = z.lazy(() =>
  z.looseObject({
    id: z.string(),
    live: z.boolean(),
    acked: z.array(z.string()),
    missing: z.array(z.string()),
    "waited_ms": z.number(),
    "drained_ms": z.number().optional(),
    "in_flight": z.number().optional(),
  })
);

/** One container, observed after the call. */
export interface ContainerResponse {
  /** The container. */
  container: ObservedContainerWire;
}

/** Tolerant reader of {@link ContainerResponse}. */
export const ContainerResponseSchema: z.ZodType<ContainerResponse> = z.lazy(() =>
  z.looseObject({
    container: ObservedContainerSchema,
  })
);

/** What `ployz.container.remove.v1` answers; an absent container is `removed: false`, a success. */
export interface RemoveContainerResponse {
  /** The id or name asked for. */
  id: string;
  /** True when this call removed it. */
  removed: boolean;
}

/** Tolerant reader of {@link RemoveContainerResponse}. */
export const RemoveContainerResponseSchema: z.ZodType<RemoveContainerResponse> = z.lazy(() =>
  z.looseObject({
    id,
    removed: z.boolean(),
  })
);

/** What `ployz.container.wait_healthy.v1` asks. */
export interface WaitHealthyRequest {
  /** Docker id or container name. */
  id: string;
  /** Give up after this long. */
  "deadline_ms": number;
  /** The container must stay up this long before it passes. */
  "monitor_ms": number;
}

/** The longest `deadline_ms` and `monitor_ms` a Machine takes in {@link WaitHealthyRequest}: an hour. */
export const WAIT_HEALTHY_MAX_MS = 3_600_000;

/** Reader of {@link WaitHealthyRequest}; fields it does not know are ignored. */
export const WaitHealthyRequestSchema: z.ZodType<WaitHealthyRequest> = z.lazy(() =>
  z.object({
    id,
    "deadline_ms": z.number().int().min(1).max(WAIT_HEALTHY_MAX_MS),
    "monitor_ms": z.number().int().min(0).max(WAIT_HEALTHY_MAX_MS),
  })
);

/** One health probe, output bounded and sanitized. */
export interface HealthProbeWire {
  /** The probe's exit code. */
  "exit_code": number | null;
  /** Its output. */
  output: string;
  /** When it finished. */
  "ended_at": string | null;
}

/** What the health gate last saw. */
export interface HealthEvidenceWire {
  /** Docker's state, or `absent` once removed. */
  state: string;
  /** Health status. */
  health: string;
  /** Exit code once stopped. */
  "exit_code": number | null;
  /** Whether the kernel killed it for lack of memory. */
  "oom_killed": boolean;
  /** Docker's restart count. */
  "restart_count": number;
  /** When it last started. */
  "started_at": string | null;
  /** Docker's record of a failed start. */
  "last_error": string | null;
  /** The last probes, most recent last. */
  "health_log": HealthProbeWire[];
}

/** What `ployz.container.wait_healthy.v1` answers: the verdict and its evidence. */
export interface WaitHealthyResponse {
  /** True when the container passed the gate. */
  passed: boolean;
  /** How it passed: `healthcheck`, `monitor` or `exited_zero`. */
  via?: string;
  /** Why it failed: `unhealthy`, `exited`, `restarted`, `not_running`, `removed`, `timed_out`. */
  reason?: string;
  /** One sentence naming the container and the evidence, on failure. */
  message?: string;
  /** How long the gate ran. */
  "elapsed_ms"?: number;
  /** What the gate last saw. */
  evidence: HealthEvidenceWire;
}

/** Tolerant reader of {@link WaitHealthyResponse}. */
export const WaitHealthyResponseSchema: z.ZodType<WaitHealthyResponse> = z.lazy(() =>
  z.looseObject({
    passed: z.boolean(),
    via: text.optional(),
    reason: text.optional(),
    message: text.optional(),
    "elapsed_ms": z.number().optional(),
    evidence: z.looseObject({
      state: z.string().max(64),
      health: z.string().max(64),
      "exit_code": z.number().int().nullable(),
      "oom_killed": z.boolean(),
      "restart_count": z.number().int(),
      "started_at": maybeText,
      "last_error": maybeText,
      "health_log": z.array(z.looseObject({
        "exit_code": z.number().int().nullable(),
        output: text,
        "ended_at": maybeText,
      })),
    }),
  })
);

/** Request and response types of the container routes, by method name. */
export interface ContainerRouteTypes {
  /** `ployz.container.list.v1`: Ployz-owned containers on the Machine, optionally filtered. */
  listContainers: [ListContainersRequest, ListContainersResponse];
  /**
   * `ployz.container.ensure.v1`: finds the container by creation key, or admits and creates it; optionally
   * starts it.
   */
  ensureContainer: [EnsureContainerRequest, EnsureContainerResponse];
  /**
   * `ployz.container.ensure_with_files.v1`: the same, for a spec that ships files, with their content; only
   * the Machine that runs the slot gets it.
   */
  ensureContainerWithFiles: [EnsureContainerWithFilesRequest, EnsureContainerResponse];
  /** `ployz.container.start.v1`: starts an owned container. */
  startContainer: [ContainerRefRequest, ContainerResponse];
  /** `ployz.container.stop.v1`: stops an owned container. */
  stopContainer: [StopContainerRequest, ContainerResponse];
  /**
   * `ployz.container.leave.v1`: takes a container out of every proxy (its Machine marks it leaving) and
   * waits, bounded, for the acks.
   */
  leaveContainer: [LeaveContainerRequest, LeaveContainerResponse];
  /** `ployz.container.remove.v1`: removes an owned container; an absent one answers `removed: false`. */
  removeContainer: [ContainerRefRequest, RemoveContainerResponse];
  /**
   * `ployz.container.wait_healthy.v1`: runs the health gate on the Machine and returns its verdict and
   * evidence.
   */
  waitHealthy: [WaitHealthyRequest, WaitHealthyResponse];
}

/** The container routes, by method name. */
export const CONTAINER_ROUTES: RouteTable<ContainerRouteTypes> = Object.freeze({
  listContainers: route("ployz.container.list.v1", ListContainersRequestSchema, ListContainersResponseSchema),
  ensureContainer: route(
    "ployz.container.ensure.v1",
    EnsureContainerRequestSchema,
    EnsureContainerResponseSchema,
  ),
  ensureContainerWithFiles: route(
    "ployz.container.ensure_with_files.v1",
    EnsureContainerWithFilesRequestSchema,
    EnsureContainerResponseSchema,
  ),
  startContainer: route("ployz.container.start.v1", ContainerRefRequestSchema, ContainerResponseSchema),
  stopContainer: route("ployz.container.stop.v1", StopContainerRequestSchema, ContainerResponseSchema),
  leaveContainer: route(
    "ployz.container.leave.v1",
    LeaveContainerRequestSchema,
    LeaveContainerResponseSchema,
  ),
  removeContainer: route(
    "ployz.container.remove.v1",
    ContainerRefRequestSchema,
    RemoveContainerResponseSchema,
  ),
  waitHealthy: route("ployz.container.wait_healthy.v1", WaitHealthyRequestSchema, WaitHealthyResponseSchema),
});
