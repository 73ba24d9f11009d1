/**
 * Machine RPC: the catalog both the daemon and the CLI speak, the hono app that serves it, and the typed client.
 *
 * Transport. HTTP/1.1 + JSON on the daemon's unix socket `<runDir>/ployz.sock` (mode 0660). Every call is
 * `POST /rpc/<capability>` with `{ "protocol_major": 1, ...fields }`; another major is refused `unsupported` with
 * `details.protocol_major`. Errors are non-2xx with `{ "error": { code, message, details } }`.
 *
 * Evolution (docs/rpc.md). A request reader ignores fields it does not know, so a newer
 * client's optional field reaches an older daemon harmlessly (rule 3), and refuses a known field of the wrong type
 * with `invalid_argument` naming it; `ployz.machine.upgrade.v1` alone refuses unknown fields, failing closed.
 * Response readers are tolerant, so fields a newer daemon adds are kept and an absent optional field means
 * unknown. A daemon advertises in DescribeContract the capabilities it has handlers for and refuses any other
 * with `unsupported` and `details.capability`; clients branch on capability names
 * ({@linkcode MachineClient.requireCapability}), never on versions.
 *
 * @module
 */

export { httpStatusOf, isRpcErrorCode, RpcError, type RpcErrorCode } from "./errors.ts";
export { CAPABILITIES, PROTOCOL_MAJOR, type RouteName, type RouteTypes } from "./catalog.ts";
export type {
  ContainerRefRequest,
  ContainerResponse,
  ContainerRouteTypes,
  ContainerSpecDocument,
  EnsureContainerRequest,
  EnsureContainerResponse,
  EnsureContainerWithFilesRequest,
  HealthEvidenceWire,
  HealthProbeWire,
  LeaveContainerRequest,
  LeaveContainerResponse,
  ListContainersRequest,
  ListContainersResponse,
  ObservedContainerWire,
  ObservedPortWire,
  RemoveContainerResponse,
  StopContainerRequest,
  WaitHealthyRequest,
  WaitHealthyResponse,
} from "./container_routes.ts";
export type {
  ImageRouteTypes,
  InspectImageRequest,
  InspectImageResponse,
  ListedImageView,
  ListImagesResponse,
  PruneImagesRequest,
  PruneImagesResponse,
  PullImageRequest,
  PullImageResponse,
  RegistryAuthField,
  ResolveImageRequest,
  ResolveImageResponse,
} from "./image_routes.ts";
export type {
  ConfigureMachineRequest,
  DescribeContractResponse,
  DockerStatus,
  InitRequest,
  MachinePhase,
  MachineRecord,
  MachineResponse,
  MachineRouteTypes,
  ObserveStatus,
  StatusResponse,
} from "./machine_routes.ts";
export type {
  AdmitPeerRequest,
  AdmitPeerResponse,
  JoinMember,
  JoinPeer,
  JoinRequest,
  JoinResponse,
  LeaveRequest,
  LeaveResponse,
  ListedMachine,
  ListMachinesResponse,
  MembershipRouteTypes,
  MembershipWire,
  RemovedWire,
  RetireMachineRequest,
  RetireMachineResponse,
} from "./membership_routes.ts";
export type { EmptyRequest } from "./route.ts";
export type {
  CopyWire,
  MachinePoolRequest,
  MachinePoolResponse,
  PoolSetWire,
  PoolWire,
  SendVolumeRequest,
  SetVolumeCopyRequest,
  SetVolumeCopyResponse,
  VolumeContainersRequest,
  VolumeContainersResponse,
  VolumeContainerWire,
  VolumeCopyWire,
  VolumeRouteTypes,
} from "./volume_routes.ts";
export { isCopyWire } from "./volume_routes.ts";
export { WAIT_HEALTHY_MAX_MS } from "./container_routes.ts";
export type {
  UpgradeAttemptWire,
  UpgradeMachineRequest,
  UpgradeMachineResponse,
  UpgradeReadyWire,
  UpgradeRouteTypes,
  UpgradeStatusRequest,
  UpgradeStatusResponse,
} from "./upgrade_routes.ts";
export {
  type LogHistoryRequest,
  type LogHistoryResponse,
  type LogLineWire,
  type LogSelectorWire,
  MAX_LOG_LINES,
  type MetricHistoryRequest,
  type MetricHistoryResponse,
  type MetricMarkerWire,
  type MetricPointWire,
  type MetricSeriesWire,
  type MetricValueWire,
  type ObserveRouteTypes,
  readTailFrame,
  type TailFrame,
  type TailLogsRequest,
} from "./observe_routes.ts";
export {
  fanOut,
  type FanOutFailure,
  type FanOutOmission,
  type FanOutOptions,
  type FanOutOutcome,
  type FanOutSuccess,
  type FanOutTarget,
  type MachineRef,
  type PartialResult,
} from "./fan_out.ts";
export {
  advertisedCapabilities,
  createRpcApp,
  type Handler,
  type HandlerContext,
  MAX_REQUEST_BYTES,
  type RpcApp,
  type RpcAppOptions,
  type RpcHandlers,
} from "./app.ts";
export type {
  AddCertificateRequest,
  CertificateRequest,
  CertificateResponse,
  CertificatesResponse,
  CertificateWire,
  ClusterRootWire,
  IngressStatusRequest,
  IngressStatusResponse,
  ListRemovalsRequest,
  ListRemovalsResponse,
  MarkRemovalRequest,
  MarkRemovalResponse,
  PointerStatusRequest,
  PointerStatusResponse,
  PointerWire,
  RemovalWire,
  ServingRouteTypes,
  SetPointerRequest,
  SetPointerResponse,
} from "./serving_routes.ts";
export {
  type CallOptions,
  type ClientMethod,
  connectMachine,
  type ConnectOptions,
  type MachineClient,
  type RouteMethods,
} from "./client.ts";
export { viaEntry, type ViaEntryOptions } from "./via_entry.ts";
export {
  type ExportImageRequest,
  type ForwardRequest,
  parseViaPath,
  PEER_PULL_DEFAULT_MS,
  PEER_PULL_MAX_MS,
  type PullFromPeerRequest,
  type PullFromPeerResponse,
  type RoutingRouteTypes,
  VIA_PREFIX,
} from "./routing_routes.ts";
export {
  type ExecAttachRequest,
  type ExecFrame,
  type ExecInputRequest,
  type ExecInputResponse,
  type ExecRouteTypes,
  type ExecStartRequest,
  type ExecStartResponse,
  MAX_EXEC_INPUT,
  parseExecFrame,
} from "./exec_routes.ts";
export {
  type BuildFrame,
  type BuildRequest,
  type BuildRouteTypes,
  type BuildUploadRequest,
  type BuildUploadResponse,
  MAX_BUILD_CONTEXT,
  MAX_UPLOAD_PIECE,
  parseBuildFrame,
} from "./build_routes.ts";
export { muxFetch, type StdioCommand, stdioFetch } from "./stdio_transport.ts";
export { type MuxSession, muxSession, type MuxStream, serveMux } from "./mux.ts";
export { type ListenOptions, listenUnix, type SocketServer } from "./listen.ts";
export { readBodyCapped } from "../util/mod.ts";
