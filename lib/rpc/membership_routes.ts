/**
 * Membership routes of Machine RPC: listing Machines as one Machine observes them, joining a Cluster, admitting a
 * joiner's key on the Entry Machine, leaving, and retiring a gone Machine. Requests ignore fields they do not know
 * and are strict on the types of those they do; responses are tolerant (docs/rpc.md, rules 2 and 3).
 *
 * @module
 */

import * as z from "zod";
import { type MachineRecord, MachineRecordSchema } from "./machine_routes.ts";
import { type EmptyRequest, EmptyRequestSchema, route, type RouteTable } from "./route.ts";

const text = z.string().max(4096);
const id = z.string().min(1).max(256);
const key = z.string().min(1).max(128);
const subnet = z.string().min(1).max(64);
const endpoint = z.string().min(1).max(256);

/** A Machine's membership as one observer judges it. */
export type MembershipWire = "unknown" | "up" | "suspect" | "down" | (string & Record<never, never>);

/** One Machine of `ployz.machine.list.v1`: its replicated row plus the observer's judgement of it. */
export interface ListedMachine {
  /** Durable id. */
  id: string;
  /** Machine Name; names may collide. */
  name: string;
  /** Its Machine Subnet, if its row names one. */
  subnet?: string;
  /** Its Advertised Endpoints (`host:port`). */
  endpoints: string[];
  /** Its lifecycle phase as its own row says. */
  phase?: string;
  /** WireGuard public key. */
  "public_key"?: string;
  /** Ed25519 key its replicated changes are signed with. */
  "signing_key"?: string;
  /** Its Machine Labels, as its own row says. */
  labels?: Record<string, string>;
  /** False when its row refuses new workloads. */
  "accepts_workloads"?: boolean;
  /** False when its row refuses ingress. */
  "accepts_ingress"?: boolean;
  /** The observer's judgement; the observer itself is `up`. */
  membership: MembershipWire;
  /** True for the observer's own row. */
  self?: boolean;
  /** The latest WireGuard handshake the observer saw with it (ISO 8601). */
  "last_handshake_at"?: string;
  /** When the observer last received store traffic from it (ISO 8601). */
  "last_store_traffic_at"?: string;
  /** When the observer's WireGuard interface last counted bytes from it, keepalives included (ISO 8601). */
  "last_received_at"?: string;
  /**
   * Replicated changes the observer refused (bad or missing signature, unadmitted author, malformed, clock too
   * far ahead) among those this Machine delivered to it, since the observer's daemon started. Absent for the
   * observer itself and from daemons that do not count.
   */
  "refused_changes"?: number;
}

/** What `ployz.machine.list.v1` answers: one Machine's observation, never the Cluster's truth. */
export interface ListMachinesResponse {
  /** Whose observation this is. */
  observer: { "machine_id": string; "machine_name": string };
  /** When it was made (ISO 8601). */
  "observed_at": string;
  /** Every Machine row the observer holds (tombstones excluded), with its membership judgement. */
  machines: ListedMachine[];
  /** Why the observer's mesh is not working, when it is not (WireGuard or the sync listener failed). */
  "mesh_error"?: string;
  /** Every Machine the observer accepts replicated changes from, also those that left: what a joiner starts from. */
  members?: JoinMember[];
  /** Set when the observer itself was retired from its Cluster (`machine rm --gone`), as a peer's refusal proved. */
  removed?: RemovedWire;
}

/** Who retired a Machine from its Cluster and when, as the signed row its peer showed it said. */
export interface RemovedWire {
  /** The Machine that retired it. */
  by: string;
  /** That Machine's name. */
  "by_name"?: string;
  /** When (ISO 8601), as the row says. */
  at?: string;
  /** When this Machine was told (ISO 8601). */
  "noticed_at"?: string;
}

/** Tolerant reader of {@link ListMachinesResponse}. */
export const ListMachinesResponseSchema: z.ZodType<ListMachinesResponse> = z.lazy(() =>
  z.looseObject({
    observer: z.looseObject({ "machine_id": id, "machine_name": text }),
    "observed_at": text,
    machines: z.array(z.looseObject({
      id,
      name: text,
      subnet: z.string().max(64).optional(),
      endpoints: z.array(z.string().max(256)).max(64).default([]),
      phase: z.string().max(64).optional(),
      "public_key": z.string().max(128).optional(),
      "signing_key": z.string().max(128).optional(),
      labels: z.record(z.string().max(128), z.string().max(256)).optional(),
      "accepts_workloads": z.boolean().optional(),
      "accepts_ingress": z.boolean().optional(),
      membership: z.string().max(32),
      self: z.boolean().optional(),
      "last_handshake_at": text.optional(),
      "last_store_traffic_at": text.optional(),
      "last_received_at": text.optional(),
      "refused_changes": z.number().int().min(0).optional(),
    })).max(65536),
    "mesh_error": text.optional(),
    members: z.array(z.looseObject({ id, "signing_key": key })).max(65536).optional(),
    removed: z.looseObject({
      by: text,
      "by_name": text.optional(),
      at: text.optional(),
      "noticed_at": text.optional(),
    }).optional(),
  })
);

/** One peer a joiner starts from: the Entry Machine's own row. */
export interface JoinPeer {
  /** Its Machine id. */
  id: string;
  /** Its Machine Name. */
  name?: string;
  /** Its WireGuard public key. */
  "public_key": string;
  /** Its Advertised Endpoints. */
  endpoints: string[];
  /** Its Machine Subnet. */
  subnet: string;
}

/** What `ployz.machine.join.v1` asks of an uninitialized Machine. */
export interface JoinRequest {
  /** The Cluster to join. */
  "cluster_id": string;
  /** The Cluster's name. */
  "cluster_name": string;
  /** The Machine Subnet the operator allocated for this Machine. */
  subnet: string;
  /** Machine Name to take; default the current one. */
  "machine_name"?: string;
  /** Machines to sync with first (the Entry Machine); at least one. */
  peers: JoinPeer[];
  /** The Machines whose replicated changes the joiner trusts from the start: the Entry Machine's members. */
  members?: JoinMember[];
}

/** A Machine a joiner trusts from the start, as the Entry Machine knows it. */
export interface JoinMember {
  /** Its Machine id. */
  id: string;
  /** Its Ed25519 signing key, base64. */
  "signing_key": string;
}

/** Reader of {@link JoinRequest}; fields it does not know are ignored. */
export const JoinRequestSchema: z.ZodType<JoinRequest> = z.lazy(() =>
  z.object({
    "cluster_id": z.string().min(1).max(128),
    "cluster_name": z.string().min(1).max(128),
    subnet,
    "machine_name": z.string().min(1).max(128).optional(),
    peers: z.array(z.object({
      id,
      name: z.string().min(1).max(256).optional(),
      "public_key": key,
      endpoints: z.array(endpoint).max(64),
      subnet,
    })).min(1).max(16),
    members: z.array(z.object({ id, "signing_key": key })).max(65536).optional(),
  })
);

/** What `ployz.machine.join.v1` answers: the record now (phase `joining` until caught up) and its endpoints. */
export interface JoinResponse {
  /** The Machine record after the call. */
  machine: MachineRecord;
  /** The endpoints it advertises in its row. */
  endpoints: string[];
}

/** Tolerant reader of {@link JoinResponse}. */
export const JoinResponseSchema: z.ZodType<JoinResponse> = z.lazy(() =>
  z.looseObject({
    machine: MachineRecordSchema,
    endpoints: z.array(z.string().max(256)).max(64).default([]),
  })
);

/** What `ployz.machine.admit_peer.v1` asks of the Entry Machine: accept a joiner's handshakes before its row arrives. */
export interface AdmitPeerRequest {
  /** The joiner's Machine id. */
  "machine_id": string;
  /** The joiner's WireGuard public key. */
  "public_key": string;
  /** The Machine Subnet allocated to the joiner. */
  subnet: string;
  /** Endpoints to reach it at, when known; without them the Entry Machine learns its endpoint from its handshake. */
  endpoints?: string[];
  /** The joiner's Ed25519 signing key: the Entry Machine admits it, so every member accepts its changes. */
  "signing_key"?: string;
}

/** Reader of {@link AdmitPeerRequest}; fields it does not know are ignored. */
export const AdmitPeerRequestSchema: z.ZodType<AdmitPeerRequest> = z.lazy(() =>
  z.object({
    "machine_id": id,
    "public_key": key,
    subnet,
    endpoints: z.array(endpoint).max(64).optional(),
    "signing_key": key.optional(),
  })
);

/** What `ployz.machine.admit_peer.v1` answers. */
export interface AdmitPeerResponse {
  /** The admitting Machine. */
  "machine_id": string;
  /** Whether the peer is configured on its WireGuard interface now (false when the mesh is not working). */
  configured: boolean;
  /** Why not, when not. */
  error?: string;
}

/** Tolerant reader of {@link AdmitPeerResponse}. */
export const AdmitPeerResponseSchema: z.ZodType<AdmitPeerResponse> = z.lazy(() =>
  z.looseObject({
    "machine_id": id,
    configured: z.boolean(),
    error: text.optional(),
  })
);

/** What `ployz.machine.leave.v1` asks: this Machine leaves its Cluster. */
export interface LeaveRequest {
  /** The Machine's own name, confirming that its Ployz containers are removed (Data Loss). */
  "confirm_data_loss"?: string;
}

/** Reader of {@link LeaveRequest}; fields it does not know are ignored. */
export const LeaveRequestSchema: z.ZodType<LeaveRequest> = z.lazy(() =>
  z.object({
    "confirm_data_loss": z.string().min(1).max(256).optional(),
  })
);

/** What `ployz.machine.leave.v1` answers: what was done, and which peers confirmed they hold the tombstone. */
export interface LeaveResponse {
  /** The Machine that left. */
  "machine_id": string;
  /** Ployz containers removed. */
  "removed_containers": string[];
  /** Peers (Machine ids) that received the tombstone of its row before it left. */
  "tombstone_delivered_to": string[];
  /** Peers the tombstone could not be delivered to directly; it spreads from the others. */
  "tombstone_not_delivered_to": string[];
  /** Whether its WireGuard interface was removed. */
  "interface_removed": boolean;
}

/** Tolerant reader of {@link LeaveResponse}. */
export const LeaveResponseSchema: z.ZodType<LeaveResponse> = z.lazy(() =>
  z.looseObject({
    "machine_id": id,
    "removed_containers": z.array(text).default([]),
    "tombstone_delivered_to": z.array(id).default([]),
    "tombstone_not_delivered_to": z.array(id).default([]),
    "interface_removed": z.boolean().default(false),
  })
);

/**
 * What `ployz.machine.retire.v1` asks the Entry Machine: mark a gone Machine retired in the Cluster's store (it
 * cannot tombstone its own rows). Refused for itself, for a Machine it heard from lately or that answers a probe
 * over the mesh now (the refusal says what it observed and, when quiet is missing, when it will accept), and, when the gone Machine
 * held containers or volumes, unless `confirm_data_loss` names it.
 */
export interface RetireMachineRequest {
  /** The gone Machine's id. */
  "machine_id": string;
  /** Its Machine Name, confirming the Data Loss of what it held. */
  "confirm_data_loss"?: string;
}

/** Reader of {@link RetireMachineRequest}. */
export const RetireMachineRequestSchema: z.ZodType<RetireMachineRequest> = z.lazy(() =>
  z.object({
    "machine_id": id,
    "confirm_data_loss": z.string().min(1).max(256).optional(),
  })
);

/** What `ployz.machine.retire.v1` answers: what the retired Machine held, as the store said. */
export interface RetireMachineResponse {
  /** The retired Machine. */
  "machine_id": string;
  /** Its Machine Name. */
  name: string;
  /** Its subnet, if its row named one. */
  subnet?: string;
  /** Its containers, by name, as its rows said. */
  containers: string[];
  /** Its volumes, by name, as its rows said. */
  volumes: string[];
  /** The Machine that wrote the mark. */
  "retired_by": string;
  /** What the Machine that wrote the mark observed of it (quiet since, probe result); absent from older daemons. */
  observed?: string;
}

/** Tolerant reader of {@link RetireMachineResponse}. */
export const RetireMachineResponseSchema: z.ZodType<RetireMachineResponse> = z.lazy(() =>
  z.looseObject({
    "machine_id": id,
    name: text,
    subnet: z.string().max(64).optional(),
    containers: z.array(text).max(65536).default([]),
    volumes: z.array(text).max(65536).default([]),
    "retired_by": id,
    observed: z.string().max(2048).optional(),
  })
);

/** Request and response types of the membership routes, by method name. */
export interface MembershipRouteTypes {
  /**
   * `ployz.machine.list.v1`: every Machine row the Machine holds, with its own membership judgement of each.
   */
  listMachines: [EmptyRequest, ListMachinesResponse];
  /**
   * `ployz.machine.join.v1`: asks an uninitialized Machine to join a Cluster; it answers at once, in phase
   * `joining`.
   */
  joinMachine: [JoinRequest, JoinResponse];
  /**
   * `ployz.machine.admit_peer.v1`: asks the Entry Machine to accept a joiner's WireGuard handshakes before
   * the joiner's row arrives.
   */
  admitPeer: [AdmitPeerRequest, AdmitPeerResponse];
  /**
   * `ployz.machine.leave.v1`: asks the Machine to leave its Cluster: it tombstones its own row and removes
   * its interface.
   */
  leaveMachine: [LeaveRequest, LeaveResponse];
  /** `ployz.machine.retire.v1`: asks the Machine to mark a gone Machine retired in the Cluster's store. */
  retireMachine: [RetireMachineRequest, RetireMachineResponse];
}

/** The membership routes, by method name. */
export const MEMBERSHIP_ROUTES: RouteTable<MembershipRouteTypes> = Object.freeze({
  listMachines: route("ployz.machine.list.v1", EmptyRequestSchema, ListMachinesResponseSchema),
  joinMachine: route("ployz.machine.join.v1", JoinRequestSchema, JoinResponseSchema),
  admitPeer: route("ployz.machine.admit_peer.v1", AdmitPeerRequestSchema, AdmitPeerResponseSchema),
  leaveMachine: route("ployz.machine.leave.v1", LeaveRequestSchema, LeaveResponseSchema),
  retireMachine: route("ployz.machine.retire.v1", RetireMachineRequestSchema, RetireMachineResponseSchema),
});
