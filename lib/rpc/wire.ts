/**
 * Wire shapes of the Machine RPC catalog, snake_case as they travel. Requests are strict: an unknown field is
 * refused with `invalid_argument` naming it. Responses are tolerant: unknown fields are kept, and an absent
 * optional field means unknown (DESIGN.md Stable promise, rules 2 and 3).
 *
 * @module
 */

import { z } from "zod";

const text = z.string().max(4096);
const id = z.string().min(1).max(256);
const maybeText = z.string().max(4096).nullable();

/** The empty request of the describe and status routes. */
export type EmptyRequest = Record<string, never>;

/** Strict empty request. */
export const EmptyRequestSchema: z.ZodType<EmptyRequest> = z.strictObject({});

/** What `ployz.machine.describe_contract.v1` answers. */
export interface DescribeContractResponse {
  /** The Machine's durable id. */
  "machine_id": string;
  /** Its Machine Name; names may collide. */
  "machine_name": string;
  /** The Machine RPC major the daemon speaks. */
  "protocol_major": number;
  /** The daemon's release; informative only, never compared. */
  "daemon_version": string;
  /** Capability names the daemon serves; clients branch on these. */
  capabilities: string[];
}

/** Tolerant reader of {@link DescribeContractResponse}. */
export const DescribeContractResponseSchema: z.ZodType<DescribeContractResponse> = z.looseObject({
  "machine_id": id,
  "machine_name": text,
  "protocol_major": z.number().int(),
  "daemon_version": text,
  capabilities: z.array(z.string().max(256)).max(4096),
});

/** A Machine's lifecycle phase: `uninitialized` or `participating` today; newer daemons may add phases. */
export type MachinePhase = "uninitialized" | "participating" | (string & Record<never, never>);

/** The local Machine record as the daemon reports it; the private key never appears. */
export interface MachineRecord {
  /** Durable id, minted by the Machine itself. */
  id: string;
  /** Machine Name. */
  name: string;
  /** Lifecycle phase. */
  phase: MachinePhase;
  /** The Cluster this Machine belongs to, once initialized. */
  "cluster_id"?: string;
  /** The Cluster's name, once initialized. */
  "cluster_name"?: string;
  /** The container subnet this Machine owns (a /24), once initialized. */
  subnet?: string;
  /** WireGuard public key, base64. */
  "public_key"?: string;
  /** False when the Machine refuses ingress (no Ingress Proxy slot); absent means it accepts ingress. */
  "accepts_ingress"?: boolean;
}

/** Tolerant reader of {@link MachineRecord}. */
export const MachineRecordSchema: z.ZodType<MachineRecord> = z.looseObject({
  id,
  name: text,
  phase: z.string().max(64),
  "cluster_id": id.optional(),
  "cluster_name": text.optional(),
  subnet: z.string().max(64).optional(),
  "public_key": z.string().max(128).optional(),
  "accepts_ingress": z.boolean().optional(),
});

/** What `ployz.machine.init.v1` asks. */
export interface InitRequest {
  /** Name of the Cluster being founded; default `default`. */
  "cluster_name"?: string;
  /** Machine Name to take; default the current one (the hostname at first start). */
  "machine_name"?: string;
  /** The Machine's container subnet, an IPv4 /24; default `10.210.1.0/24`. */
  subnet?: string;
}

/** Strict reader of {@link InitRequest}. */
export const InitRequestSchema: z.ZodType<InitRequest> = z.strictObject({
  "cluster_name": z.string().min(1).max(128).optional(),
  "machine_name": z.string().min(1).max(128).optional(),
  subnet: z.string().min(1).max(64).optional(),
});

/** What `ployz.machine.init.v1` answers. */
export interface InitResponse {
  /** The Machine record after the call. */
  machine: MachineRecord;
}

/** Tolerant reader of {@link InitResponse}. */
export const InitResponseSchema: z.ZodType<InitResponse> = z.looseObject({ machine: MachineRecordSchema });

/** Whether the Machine's Docker answered. */
export interface DockerStatus {
  /** True when Docker answered this call. */
  reachable: boolean;
  /** Docker's release, when it answered. */
  "server_version"?: string;
  /** Why it did not answer. */
  error?: string;
}

/** What `ployz.machine.status.v1` answers. */
export interface StatusResponse {
  /** The local Machine record. */
  machine: MachineRecord;
  /** The local Docker, as observed during this call. */
  docker: DockerStatus;
  /** When this observation was made, ISO 8601. */
  "observed_at": string;
  /** The Observe Store, as observed during this call; absent from daemons that predate it. */
  observe?: ObserveStatus;
}

/** Whether the Machine's Observe Store answered. */
export interface ObserveStatus {
  /** True when observe.sock accepted a connection during this call. */
  running: boolean;
  /** Why it is not running. */
  error?: string;
}

/** Tolerant reader of {@link StatusResponse}. */
export const StatusResponseSchema: z.ZodType<StatusResponse> = z.looseObject({
  machine: MachineRecordSchema,
  docker: z.looseObject({
    reachable: z.boolean(),
    "server_version": text.optional(),
    error: text.optional(),
  }),
  "observed_at": text,
  observe: z.looseObject({ running: z.boolean(), error: text.optional() }).optional(),
});

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
export const ObservedContainerSchema: z.ZodType<ObservedContainerWire> = z.looseObject({
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
});

/** What `ployz.container.list.v1` asks: label filters, each optional. */
export interface ListContainersRequest {
  /** Only this Project. */
  project?: string;
  /** Only this Service. */
  service?: string;
  /** Only this Deployment. */
  deployment?: string;
}

/** Strict reader of {@link ListContainersRequest}. */
export const ListContainersRequestSchema: z.ZodType<ListContainersRequest> = z.strictObject({
  project: z.string().min(1).max(256).optional(),
  service: z.string().min(1).max(256).optional(),
  deployment: z.string().min(1).max(256).optional(),
});

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
export const ListContainersResponseSchema: z.ZodType<ListContainersResponse> = z.looseObject({
  "machine_id": id,
  "observed_at": text,
  containers: z.array(ObservedContainerSchema),
});

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

/** Strict envelope, tolerant spec: the spec is a Ployz document validated by the daemon. */
export const EnsureContainerRequestSchema: z.ZodType<EnsureContainerRequest> = z.strictObject({
  spec: z.looseObject({ name: z.string(), creationKey: z.string(), image: z.string() }),
  start: z.boolean(),
});

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
export const EnsureContainerResponseSchema: z.ZodType<EnsureContainerResponse> = z.looseObject({
  container: ObservedContainerSchema,
  created: z.boolean(),
  started: z.boolean(),
});

/** A request naming one container by id or name. */
export interface ContainerRefRequest {
  /** Docker id or container name. */
  id: string;
}

/** Strict reader of {@link ContainerRefRequest}. */
export const ContainerRefRequestSchema: z.ZodType<ContainerRefRequest> = z.strictObject({ id });

/** What `ployz.container.stop.v1` asks. */
export interface StopContainerRequest {
  /** Docker id or container name. */
  id: string;
  /** Seconds between the stop signal and the kill; default the container's own. */
  "grace_seconds"?: number;
}

/** Strict reader of {@link StopContainerRequest}. */
export const StopContainerRequestSchema: z.ZodType<StopContainerRequest> = z.strictObject({
  id,
  "grace_seconds": z.number().int().min(0).max(3600).optional(),
});

/** One container, observed after the call. */
export interface ContainerResponse {
  /** The container. */
  container: ObservedContainerWire;
}

/** Tolerant reader of {@link ContainerResponse}. */
export const ContainerResponseSchema: z.ZodType<ContainerResponse> = z.looseObject({
  container: ObservedContainerSchema,
});

/** What `ployz.container.remove.v1` answers; an absent container is `removed: false`, a success. */
export interface RemoveContainerResponse {
  /** The id or name asked for. */
  id: string;
  /** True when this call removed it. */
  removed: boolean;
}

/** Tolerant reader of {@link RemoveContainerResponse}. */
export const RemoveContainerResponseSchema: z.ZodType<RemoveContainerResponse> = z.looseObject({
  id,
  removed: z.boolean(),
});

/** What `ployz.container.wait_healthy.v1` asks. */
export interface WaitHealthyRequest {
  /** Docker id or container name. */
  id: string;
  /** Give up after this long. */
  "deadline_ms": number;
  /** The container must stay up this long before it passes. */
  "monitor_ms": number;
}

/** Strict reader of {@link WaitHealthyRequest}. */
export const WaitHealthyRequestSchema: z.ZodType<WaitHealthyRequest> = z.strictObject({
  id,
  "deadline_ms": z.number().int().min(1).max(3_600_000),
  "monitor_ms": z.number().int().min(0).max(3_600_000),
});

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
export const WaitHealthyResponseSchema: z.ZodType<WaitHealthyResponse> = z.looseObject({
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
});

/** What `ployz.container.logs.v1` asks; the answer is a `text/plain` stream. */
export interface ContainerLogsRequest {
  /** Docker id or container name. */
  id: string;
  /** Only the last lines; all when absent. */
  tail?: number;
  /** Keep the stream open for new output. */
  follow?: boolean;
}

/** Strict reader of {@link ContainerLogsRequest}. */
export const ContainerLogsRequestSchema: z.ZodType<ContainerLogsRequest> = z.strictObject({
  id,
  tail: z.number().int().min(0).max(1_000_000).optional(),
  follow: z.boolean().optional(),
});

/** What `ployz.image.inspect.v1` asks. */
export interface InspectImageRequest {
  /** Image reference or id. */
  ref: string;
}

/** Strict reader of {@link InspectImageRequest}. */
export const InspectImageRequestSchema: z.ZodType<InspectImageRequest> = z.strictObject({
  ref: z.string().min(1).max(1024),
});

/** What `ployz.image.inspect.v1` answers. */
export interface InspectImageResponse {
  /** Whether the image is on the Machine. */
  present: boolean;
  /** Its id, when present. */
  id?: string;
}

/** Tolerant reader of {@link InspectImageResponse}. */
export const InspectImageResponseSchema: z.ZodType<InspectImageResponse> = z.looseObject({
  present: z.boolean(),
  id: text.optional(),
});

/** The body of every error answer. */
export interface ErrorBody {
  /** The error. */
  error: { code: string; message: string; details: Record<string, unknown> };
}

/** Tolerant reader of {@link ErrorBody}. */
export const ErrorBodySchema: z.ZodType<ErrorBody> = z.looseObject({
  error: z.looseObject({
    code: z.string().max(64),
    message: z.string().max(16384),
    details: z.record(z.string(), z.unknown()).default({}),
  }),
});
