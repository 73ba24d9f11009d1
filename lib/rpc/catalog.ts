/**
 * The Machine RPC catalog, assembled from the route groups (`machine_`, `membership_`, `container_`, `image_`,
 * `observe_`, `upgrade_`, `routing_`, `serving_routes.ts`, …). A capability name never changes meaning; changed semantics get a
 * new `.vN` row (docs/rpc.md, rules 1 and 4).
 *
 * @module
 */

import { BUILD_ROUTES, type BuildRouteTypes } from "./build_routes.ts";
import { CONTAINER_ROUTES } from "./container_routes.ts";
import { EXEC_ROUTES, type ExecRouteTypes } from "./exec_routes.ts";
import { IMAGE_ROUTES } from "./image_routes.ts";
import { MACHINE_ROUTES } from "./machine_routes.ts";
import { MEMBERSHIP_ROUTES } from "./membership_routes.ts";
import { OBSERVE_ROUTES } from "./observe_routes.ts";
import type { Route } from "./route.ts";
import { ROUTING_ROUTES } from "./routing_routes.ts";
import { SERVING_ROUTES } from "./serving_routes.ts";
import { UPGRADE_ROUTES } from "./upgrade_routes.ts";
import { VOLUME_ROUTES } from "./volume_routes.ts";

export { PROTOCOL_MAJOR, type Route } from "./route.ts";
import type {
  ContainerRefRequest,
  ContainerResponse,
  EnsureContainerRequest,
  EnsureContainerResponse,
  EnsureContainerWithFilesRequest,
  LeaveContainerRequest,
  LeaveContainerResponse,
  ListContainersRequest,
  ListContainersResponse,
  RemoveContainerResponse,
  StopContainerRequest,
  WaitHealthyRequest,
  WaitHealthyResponse,
} from "./container_routes.ts";
import type {
  InspectImageRequest,
  InspectImageResponse,
  ListImagesResponse,
  PruneImagesRequest,
  PruneImagesResponse,
  PullImageRequest,
  PullImageResponse,
  ResolveImageRequest,
  ResolveImageResponse,
} from "./image_routes.ts";
import type {
  ConfigureMachineRequest,
  ConfigureMachineResponse,
  DescribeContractResponse,
  InitRequest,
  InitResponse,
  StatusResponse,
} from "./machine_routes.ts";
import type {
  AdmitPeerRequest,
  AdmitPeerResponse,
  JoinRequest,
  JoinResponse,
  LeaveRequest,
  LeaveResponse,
  ListMachinesResponse,
  RetireMachineRequest,
  RetireMachineResponse,
} from "./membership_routes.ts";
import type {
  LogHistoryRequest,
  LogHistoryResponse,
  MetricHistoryRequest,
  MetricHistoryResponse,
  TailLogsRequest,
} from "./observe_routes.ts";
import type { EmptyRequest } from "./route.ts";
import type {
  ExportImageRequest,
  ForwardRequest,
  PullFromPeerRequest,
  PullFromPeerResponse,
} from "./routing_routes.ts";
import type {
  AddCertificateRequest,
  CertificateRequest,
  CertificateResponse,
  CertificatesResponse,
  ClusterRootWire,
  IngressStatusRequest,
  IngressStatusResponse,
  ListRemovalsRequest,
  ListRemovalsResponse,
  MarkRemovalRequest,
  MarkRemovalResponse,
  PointerStatusRequest,
  PointerStatusResponse,
  SetPointerRequest,
  SetPointerResponse,
} from "./serving_routes.ts";
import type {
  UpgradeMachineRequest,
  UpgradeMachineResponse,
  UpgradeStatusRequest,
  UpgradeStatusResponse,
} from "./upgrade_routes.ts";
import type {
  MachinePoolRequest,
  MachinePoolResponse,
  SendVolumeRequest,
  SetVolumeCopyRequest,
  SetVolumeCopyResponse,
  VolumeContainersRequest,
  VolumeContainersResponse,
} from "./volume_routes.ts";

/** Request and response types of every route, by method name. */
export interface RouteTypes extends ExecRouteTypes, BuildRouteTypes {
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
  /** `ployz.container.ensure_with_files.v1`. */
  ensureContainerWithFiles: [EnsureContainerWithFilesRequest, EnsureContainerResponse];
  /** `ployz.container.start.v1`. */
  startContainer: [ContainerRefRequest, ContainerResponse];
  /** `ployz.container.stop.v1`. */
  stopContainer: [StopContainerRequest, ContainerResponse];
  /** `ployz.container.leave.v1`: marks a container leaving every proxy and waits (bounded) for the acks. */
  leaveContainer: [LeaveContainerRequest, LeaveContainerResponse];
  /** `ployz.container.remove.v1`. */
  removeContainer: [ContainerRefRequest, RemoveContainerResponse];
  /** `ployz.container.wait_healthy.v1`. */
  waitHealthy: [WaitHealthyRequest, WaitHealthyResponse];
  /** `ployz.image.inspect.v1`. */
  inspectImage: [InspectImageRequest, InspectImageResponse];
  /** `ployz.image.resolve.v1`: the digest a registry serves for a tag, through the Machine's Docker. */
  resolveImage: [ResolveImageRequest, ResolveImageResponse];
  /** `ployz.image.pull.v1`: start or join the Machine's pull of a pinned reference; answers with progress. */
  pullImage: [PullImageRequest, PullImageResponse];
  /** `ployz.image.list.v1`: the Machine's images, which Ployz pulled, and which Services use them. */
  listImages: [EmptyRequest, ListImagesResponse];
  /** `ployz.image.prune.v1`: removes images Ployz pulled that no container uses (`all`: any unused image). */
  pruneImages: [PruneImagesRequest, PruneImagesResponse];
  /** `ployz.machine.list.v1`: every Machine row with the observer's membership judgement. */
  listMachines: [EmptyRequest, ListMachinesResponse];
  /** `ployz.machine.join.v1`: an uninitialized Machine joins a Cluster. */
  joinMachine: [JoinRequest, JoinResponse];
  /** `ployz.machine.admit_peer.v1`: the Entry Machine accepts a joiner's handshakes before its row arrives. */
  admitPeer: [AdmitPeerRequest, AdmitPeerResponse];
  /** `ployz.machine.leave.v1`: the Machine tombstones its own row and leaves the mesh. */
  leaveMachine: [LeaveRequest, LeaveResponse];
  /** `ployz.machine.configure.v1`: the Machine sets its own Labels and acceptance flags. */
  configureMachine: [ConfigureMachineRequest, ConfigureMachineResponse];
  /** `ployz.machine.retire.v1`: the Machine marks a gone Machine retired in the Cluster's store. */
  retireMachine: [RetireMachineRequest, RetireMachineResponse];
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
  /** `ployz.removal.mark.v1`: marks a Project or Service removed (a name-keyed row), or cancels the mark. */
  markRemoval: [MarkRemovalRequest, MarkRemovalResponse];
  /** `ployz.removal.list.v1`: removal marks and this Machine's view of their progress. */
  listRemovals: [ListRemovalsRequest, ListRemovalsResponse];
  /** `ployz.serving.certificates.v1`: the certificate rows, without keys. */
  listCertificates: [EmptyRequest, CertificatesResponse];
  /** `ployz.serving.certificate_renew.v1`: asks for a renewal of an ACME certificate. */
  renewCertificate: [CertificateRequest, CertificateResponse];
  /** `ployz.serving.certificate_add.v1`: an operator's certificate and key for a hostname. */
  addCertificate: [AddCertificateRequest, CertificateResponse];
  /** `ployz.serving.certificate_remove.v1`: removes a hostname's certificate row. */
  removeCertificate: [CertificateRequest, CertificateResponse];
  /** `ployz.serving.certificate_internal.v1`: serves a hostname from the Cluster's internal root, issuing now. */
  addInternalCertificate: [CertificateRequest, CertificateResponse];
  /** `ployz.serving.certificate_root.v1`: the Cluster's internal root certificate, without its key. */
  clusterRoot: [EmptyRequest, ClusterRootWire];
  /** `ployz.machine.pool.v1`: show the Machine's Pool and its Volume copies, or bind it to a Pool first. */
  machinePool: [MachinePoolRequest, MachinePoolResponse];
  /** `ployz.volume.set_copy.v1`: SetVolumeCopy, one step of a Volume Run, checked against this Machine's copy. */
  setVolumeCopy: [SetVolumeCopyRequest, SetVolumeCopyResponse];
  /** `ployz.volume.send.v1`: a Snapshot's send stream, for a peer's receive over the mesh. */
  sendVolume: [SendVolumeRequest, ReadableStream<Uint8Array>];
  /** `ployz.serving.ingress_status.v1`: what this Machine's Ingress Proxy serves, as last loaded. */
  ingressStatus: [IngressStatusRequest, IngressStatusResponse];
  /** `ployz.volume.containers.v1`: the Containers mounting a Volume here, with their full specs. */
  volumeContainers: [VolumeContainersRequest, VolumeContainersResponse];
}

/** A route's method name. */
export type RouteName = keyof RouteTypes;

/** The catalog, by method name: the route groups must add up to exactly {@link RouteTypes}. */
export type Catalog = { readonly [K in RouteName]: Route<RouteTypes[K][0], RouteTypes[K][1]> };

/** Every route this release knows. */
export const CATALOG: Catalog = Object.freeze({
  ...MACHINE_ROUTES,
  ...MEMBERSHIP_ROUTES,
  ...CONTAINER_ROUTES,
  ...IMAGE_ROUTES,
  ...OBSERVE_ROUTES,
  ...UPGRADE_ROUTES,
  ...ROUTING_ROUTES,
  ...SERVING_ROUTES,
  ...EXEC_ROUTES,
  ...VOLUME_ROUTES,
  ...BUILD_ROUTES,
});

/** Capability names, by method name. */
export const CAPABILITIES: { readonly [K in RouteName]: string } = Object.freeze(
  Object.fromEntries(Object.entries(CATALOG).map(([k, r]) => [k, r.capability])) as {
    [K in RouteName]: string;
  },
);

/**
 * Capabilities no longer served, each with what replaced it (rule 6: no longer advertised, and refused naming the
 * capability and its replacement).
 */
export const RETIRED_CAPABILITIES: Readonly<Record<string, string>> = Object.freeze({
  // Docker's own log stream of one container; the Observe Store keeps the same output, of removed containers too.
  "ployz.container.logs.v1": "ployz.observe.log_history.v1 or ployz.observe.tail_logs.v1",
});

/** The route serving a capability name, or `undefined` for a name this release does not know. */
export function routeOf(capability: string): RouteName | undefined {
  for (const [name, route] of Object.entries(CATALOG) as [RouteName, Route<unknown, unknown>][]) {
    if (route.capability === capability) return name;
  }
  return undefined;
}
