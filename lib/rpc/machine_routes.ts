/**
 * Machine routes of Machine RPC: what the daemon is (DescribeContract), founding a Cluster (init), its status, and
 * its own Labels and acceptance flags (configure); membership is `membership_routes.ts`. Requests ignore fields they
 * do not know and are strict on the types of those they do; responses are tolerant (docs/rpc.md, rules 2 and 3).
 *
 * @module
 */

import * as z from "zod";
import { type EmptyRequest, EmptyRequestSchema, route, type RouteTable } from "./route.ts";

const text = z.string().max(4096);
const id = z.string().min(1).max(256);

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
export const DescribeContractResponseSchema: z.ZodType<DescribeContractResponse> = z.lazy(() =>
  z.looseObject({
    "machine_id": id,
    "machine_name": text,
    "protocol_major": z.number().int(),
    "daemon_version": text,
    capabilities: z.array(z.string().max(256)).max(4096),
  })
);

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
  /** Ed25519 key its replicated changes are signed with, base64. */
  "signing_key"?: string;
  /** False when the Machine refuses ingress (no Ingress Proxy slot); absent means it accepts ingress. */
  "accepts_ingress"?: boolean;
  /** False when the Machine refuses new workloads (a drained Machine); absent means it accepts them. */
  "accepts_workloads"?: boolean;
  /** Its Machine Labels, set by `ployz machine label`; absent means none. */
  labels?: Record<string, string>;
  /** False when the Machine refuses Builds; absent means it accepts them. */
  "accepts_builds"?: boolean;
  /** The Docker bridge network its containers join (absent from older daemons: `ployz`). */
  "docker_network"?: string;
}

/** Tolerant reader of {@link MachineRecord}. */
export const MachineRecordSchema: z.ZodType<MachineRecord> = z.lazy(() =>
  z.looseObject({
    id,
    name: text,
    phase: z.string().max(64),
    "cluster_id": id.optional(),
    "cluster_name": text.optional(),
    subnet: z.string().max(64).optional(),
    "public_key": z.string().max(128).optional(),
    "signing_key": z.string().max(128).optional(),
    "accepts_ingress": z.boolean().optional(),
    "accepts_workloads": z.boolean().optional(),
    labels: z.record(z.string().max(128), z.string().max(256)).optional(),
    "accepts_builds": z.boolean().optional(),
    "docker_network": z.string().max(128).optional(),
  })
);

/** What `ployz.machine.init.v1` asks. */
export interface InitRequest {
  /** Name of the Cluster being founded; default `default`. */
  "cluster_name"?: string;
  /** Machine Name to take; default the current one (the hostname at first start). */
  "machine_name"?: string;
  /** The Machine's container subnet, an IPv4 /24; default `10.210.1.0/24`. */
  subnet?: string;
}

/** Reader of {@link InitRequest}; fields it does not know are ignored. */
export const InitRequestSchema: z.ZodType<InitRequest> = z.lazy(() =>
  z.object({
    "cluster_name": z.string().min(1).max(128).optional(),
    "machine_name": z.string().min(1).max(128).optional(),
    subnet: z.string().min(1).max(64).optional(),
  })
);

/** What `ployz.machine.init.v1` and `ployz.machine.configure.v1` answer: the record after the change. */
export interface MachineResponse {
  /** The Machine record after the call. */
  machine: MachineRecord;
}

/** Tolerant reader of {@link MachineResponse}. */
export const MachineResponseSchema: z.ZodType<MachineResponse> = z.lazy(() =>
  z.looseObject({ machine: MachineRecordSchema })
);

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
export const StatusResponseSchema: z.ZodType<StatusResponse> = z.lazy(() =>
  z.looseObject({
    machine: MachineRecordSchema,
    docker: z.looseObject({
      reachable: z.boolean(),
      "server_version": text.optional(),
      error: text.optional(),
    }),
    "observed_at": text,
    observe: z.looseObject({ running: z.boolean(), error: text.optional() }).optional(),
  })
);

/**
 * What `ployz.machine.configure.v1` asks: changes to the Machine's own Labels and acceptance flags, which it
 * writes in its own record and row. Absent fields are left as they are.
 */
export interface ConfigureMachineRequest {
  /** Labels to set, by key. */
  "set_labels"?: Record<string, string>;
  /** Label keys to remove. */
  "remove_labels"?: string[];
  /** Accept new workloads (Service containers). */
  "accepts_workloads"?: boolean;
  /** Accept an Ingress Proxy. */
  "accepts_ingress"?: boolean;
  /** Accept Builds. */
  "accepts_builds"?: boolean;
}

/** Reader of {@link ConfigureMachineRequest}; the daemon checks each key and value itself. */
export const ConfigureMachineRequestSchema: z.ZodType<ConfigureMachineRequest> = z.lazy(() =>
  z.object({
    "set_labels": z.record(z.string().max(1024), z.string().max(4096)).optional(),
    "remove_labels": z.array(z.string().max(1024)).max(256).optional(),
    "accepts_workloads": z.boolean().optional(),
    "accepts_ingress": z.boolean().optional(),
    "accepts_builds": z.boolean().optional(),
  })
);

/** Request and response types of the machine routes, by method name. */
export interface MachineRouteTypes {
  /**
   * `ployz.machine.describe_contract.v1`: what the Machine serves: its id, name, protocol major, daemon
   * version and capabilities.
   */
  describeContract: [EmptyRequest, DescribeContractResponse];
  /** `ployz.machine.init.v1`: founds a Cluster on this Machine; idempotent for the same Cluster. */
  init: [InitRequest, MachineResponse];
  /** `ployz.machine.status.v1`: the local Machine record and whether its Docker answers. */
  status: [EmptyRequest, StatusResponse];
  /** `ployz.machine.configure.v1`: asks the Machine to change its own Labels and acceptance flags. */
  configureMachine: [ConfigureMachineRequest, MachineResponse];
}

/** The Machine routes, by method name. */
export const MACHINE_ROUTES: RouteTable<MachineRouteTypes> = Object.freeze({
  describeContract: route(
    "ployz.machine.describe_contract.v1",
    EmptyRequestSchema,
    DescribeContractResponseSchema,
  ),
  init: route("ployz.machine.init.v1", InitRequestSchema, MachineResponseSchema),
  status: route("ployz.machine.status.v1", EmptyRequestSchema, StatusResponseSchema),
  configureMachine: route(
    "ployz.machine.configure.v1",
    ConfigureMachineRequestSchema,
    MachineResponseSchema,
  ),
});
