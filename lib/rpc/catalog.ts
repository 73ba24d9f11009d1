/**
 * The Machine RPC catalog: every route's capability name, its strict request schema and its tolerant response
 * schema. A capability name never changes meaning; changed semantics get a new `.vN` row (DESIGN.md Stable
 * promise, rules 1 and 4).
 *
 * @module
 */

import type { z } from "zod";
import {
  type ContainerLogsRequest,
  ContainerLogsRequestSchema,
  type ContainerRefRequest,
  ContainerRefRequestSchema,
  type ContainerResponse,
  ContainerResponseSchema,
  type DescribeContractResponse,
  DescribeContractResponseSchema,
  type EmptyRequest,
  EmptyRequestSchema,
  type EnsureContainerRequest,
  EnsureContainerRequestSchema,
  type EnsureContainerResponse,
  EnsureContainerResponseSchema,
  type InitRequest,
  InitRequestSchema,
  type InitResponse,
  InitResponseSchema,
  type InspectImageRequest,
  InspectImageRequestSchema,
  type InspectImageResponse,
  InspectImageResponseSchema,
  type ListContainersRequest,
  ListContainersRequestSchema,
  type ListContainersResponse,
  ListContainersResponseSchema,
  type RemoveContainerResponse,
  RemoveContainerResponseSchema,
  type StatusResponse,
  StatusResponseSchema,
  type StopContainerRequest,
  StopContainerRequestSchema,
  type WaitHealthyRequest,
  WaitHealthyRequestSchema,
  type WaitHealthyResponse,
  WaitHealthyResponseSchema,
} from "./wire.ts";
import {
  type AdmitPeerRequest,
  AdmitPeerRequestSchema,
  type AdmitPeerResponse,
  AdmitPeerResponseSchema,
  type JoinRequest,
  JoinRequestSchema,
  type JoinResponse,
  JoinResponseSchema,
  type LeaveRequest,
  LeaveRequestSchema,
  type LeaveResponse,
  LeaveResponseSchema,
  type ListMachinesResponse,
  ListMachinesResponseSchema,
} from "./wire_machines.ts";
import {
  UPGRADE_ROUTES,
  type UpgradeMachineRequest,
  type UpgradeMachineResponse,
  type UpgradeStatusRequest,
  type UpgradeStatusResponse,
} from "./upgrade_routes.ts";
import {
  type LogHistoryRequest,
  type LogHistoryResponse,
  type MetricHistoryRequest,
  type MetricHistoryResponse,
  OBSERVE_ROUTES,
  type TailLogsRequest,
} from "./observe_routes.ts";
import {
  type ExportImageRequest,
  type ForwardRequest,
  type PullFromPeerRequest,
  type PullFromPeerResponse,
  ROUTING_ROUTES,
} from "./routing_routes.ts";
import {
  type PointerStatusRequest,
  type PointerStatusResponse,
  SERVING_ROUTES,
  type SetPointerRequest,
  type SetPointerResponse,
} from "./serving_routes.ts";

/** The Machine RPC major this release speaks. */
export const PROTOCOL_MAJOR = 1;

/** One catalog row: a JSON answer, or a `text/plain` stream when `response` is `"stream"`. */
export interface Route<Req, Res> {
  /** `ployz.<area>.<verb>.v<N>`. */
  readonly capability: string;
  /** Strict: unknown fields are refused. `protocol_major` is checked before and not part of it. */
  readonly request: z.ZodType<Req>;
  /** Tolerant reader of the answer, or `"stream"`. */
  readonly response: z.ZodType<Res> | "stream";
}

/** Request and response types of every route, by method name. */
export interface RouteTypes {
  /** `ployz.machine.describe_contract.v1`. */
  describeContract: [EmptyRequest, DescribeContractResponse];
  /** `ployz.machine.init.v1`. */
  init: [InitRequest, InitResponse];
  /** `ployz.machine.status.v1`. */
  status: [EmptyRequest, StatusResponse];
  /** `ployz.container.list.v1`. */
  listContainers: [ListContainersRequest, ListContainersResponse];
  /** `ployz.container.ensure.v1`. */
  ensureContainer: [EnsureContainerRequest, EnsureContainerResponse];
  /** `ployz.container.start.v1`. */
  startContainer: [ContainerRefRequest, ContainerResponse];
  /** `ployz.container.stop.v1`. */
  stopContainer: [StopContainerRequest, ContainerResponse];
  /** `ployz.container.remove.v1`. */
  removeContainer: [ContainerRefRequest, RemoveContainerResponse];
  /** `ployz.container.wait_healthy.v1`. */
  waitHealthy: [WaitHealthyRequest, WaitHealthyResponse];
  /** `ployz.container.logs.v1` (a `text/plain` stream). */
  containerLogs: [ContainerLogsRequest, ReadableStream<Uint8Array>];
  /** `ployz.image.inspect.v1`. */
  inspectImage: [InspectImageRequest, InspectImageResponse];
  /** `ployz.machine.list.v1`: every Machine row with the observer's membership judgement. */
  listMachines: [EmptyRequest, ListMachinesResponse];
  /** `ployz.machine.join.v1`: an uninitialized Machine joins a Cluster. */
  joinMachine: [JoinRequest, JoinResponse];
  /** `ployz.machine.admit_peer.v1`: the Entry Machine accepts a joiner's handshakes before its row arrives. */
  admitPeer: [AdmitPeerRequest, AdmitPeerResponse];
  /** `ployz.machine.leave.v1`: the Machine tombstones its own row and leaves the mesh. */
  leaveMachine: [LeaveRequest, LeaveResponse];
  /** `ployz.observe.log_history.v1`: this Machine's stored container output. */
  logHistory: [LogHistoryRequest, LogHistoryResponse];
  /** `ployz.observe.tail_logs.v1` (an NDJSON stream of frames). */
  tailLogs: [TailLogsRequest, ReadableStream<Uint8Array>];
  /** `ployz.observe.metric_history.v1`: this Machine's metric samples and Rollups. */
  metricHistory: [MetricHistoryRequest, MetricHistoryResponse];
  /** `ployz.machine.upgrade.v1`: start (or find by request key) an upgrade attempt on the Machine. */
  upgradeMachine: [UpgradeMachineRequest, UpgradeMachineResponse];
  /** `ployz.machine.upgrade_status.v1`: read an upgrade attempt. */
  upgradeStatus: [UpgradeStatusRequest, UpgradeStatusResponse];
  /** `ployz.machine.forward.v1`: the Entry Machine relays one call to another Machine (the target's answer). */
  forward: [ForwardRequest, ReadableStream<Uint8Array>];
  /** `ployz.image.export.v1`: `docker save` of an image the Machine has (a tar stream). */
  exportImage: [ExportImageRequest, ReadableStream<Uint8Array>];
  /** `ployz.image.pull_from_peer.v1`: the Machine fetches an image from a peer over the mesh and loads it. */
  pullImageFromPeer: [PullFromPeerRequest, PullFromPeerResponse];
  /** `ployz.serving.set_pointer.v1`: moves a Service's Serving Pointer to a Deployment. */
  setPointer: [SetPointerRequest, SetPointerResponse];
  /** `ployz.serving.pointer_status.v1`: a pointer and this Machine's view of its acks. */
  pointerStatus: [PointerStatusRequest, PointerStatusResponse];
}

/** A route's method name. */
export type RouteName = keyof RouteTypes;

/** The catalog, by method name. */
export type Catalog = { readonly [K in RouteName]: Route<RouteTypes[K][0], RouteTypes[K][1]> };

/** Every route this release knows. */
export const CATALOG: Catalog = Object.freeze({
  describeContract: {
    capability: "ployz.machine.describe_contract.v1",
    request: EmptyRequestSchema,
    response: DescribeContractResponseSchema,
  },
  init: { capability: "ployz.machine.init.v1", request: InitRequestSchema, response: InitResponseSchema },
  status: {
    capability: "ployz.machine.status.v1",
    request: EmptyRequestSchema,
    response: StatusResponseSchema,
  },
  listContainers: {
    capability: "ployz.container.list.v1",
    request: ListContainersRequestSchema,
    response: ListContainersResponseSchema,
  },
  ensureContainer: {
    capability: "ployz.container.ensure.v1",
    request: EnsureContainerRequestSchema,
    response: EnsureContainerResponseSchema,
  },
  startContainer: {
    capability: "ployz.container.start.v1",
    request: ContainerRefRequestSchema,
    response: ContainerResponseSchema,
  },
  stopContainer: {
    capability: "ployz.container.stop.v1",
    request: StopContainerRequestSchema,
    response: ContainerResponseSchema,
  },
  removeContainer: {
    capability: "ployz.container.remove.v1",
    request: ContainerRefRequestSchema,
    response: RemoveContainerResponseSchema,
  },
  waitHealthy: {
    capability: "ployz.container.wait_healthy.v1",
    request: WaitHealthyRequestSchema,
    response: WaitHealthyResponseSchema,
  },
  containerLogs: {
    capability: "ployz.container.logs.v1",
    request: ContainerLogsRequestSchema,
    response: "stream",
  },
  inspectImage: {
    capability: "ployz.image.inspect.v1",
    request: InspectImageRequestSchema,
    response: InspectImageResponseSchema,
  },
  listMachines: {
    capability: "ployz.machine.list.v1",
    request: EmptyRequestSchema,
    response: ListMachinesResponseSchema,
  },
  joinMachine: {
    capability: "ployz.machine.join.v1",
    request: JoinRequestSchema,
    response: JoinResponseSchema,
  },
  admitPeer: {
    capability: "ployz.machine.admit_peer.v1",
    request: AdmitPeerRequestSchema,
    response: AdmitPeerResponseSchema,
  },
  leaveMachine: {
    capability: "ployz.machine.leave.v1",
    request: LeaveRequestSchema,
    response: LeaveResponseSchema,
  },
  ...OBSERVE_ROUTES,
  ...UPGRADE_ROUTES,
  ...ROUTING_ROUTES,
  ...SERVING_ROUTES,
});

/** Capability names, by method name. */
export const CAPABILITIES: { readonly [K in RouteName]: string } = Object.freeze(
  Object.fromEntries(Object.entries(CATALOG).map(([k, r]) => [k, r.capability])) as {
    [K in RouteName]: string;
  },
);

/** The route serving a capability name, or `undefined` for a name this release does not know. */
export function routeOf(capability: string): RouteName | undefined {
  for (const [name, route] of Object.entries(CATALOG) as [RouteName, Route<unknown, unknown>][]) {
    if (route.capability === capability) return name;
  }
  return undefined;
}
