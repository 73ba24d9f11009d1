/**
 * `connectMachine`: a typed Machine RPC client over the daemon's unix socket (or any fetch-like transport).
 *
 * @module
 */

import { CATALOG, type RouteName, type RouteTypes } from "./catalog.ts";
import type {
  ContainerRefRequest,
  ContainerResponse,
  ContainerSpecDocument,
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
import { envelope, ErrorBodySchema } from "./envelope.ts";
import type {
  MachinePoolRequest,
  MachinePoolResponse,
  SetVolumeCopyRequest,
  SetVolumeCopyResponse,
  VolumeContainersRequest,
  VolumeContainersResponse,
} from "./volume_routes.ts";
import { isRpcErrorCode, RpcError } from "./errors.ts";
import { CodedError } from "../util/mod.ts";
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
  UpgradeMachineRequest,
  UpgradeMachineResponse,
  UpgradeStatusRequest,
  UpgradeStatusResponse,
} from "./upgrade_routes.ts";
import type {
  LogHistoryRequest,
  LogHistoryResponse,
  MetricHistoryRequest,
  MetricHistoryResponse,
  TailLogsRequest,
} from "./observe_routes.ts";
import type {
  ExecAttachRequest,
  ExecInputRequest,
  ExecInputResponse,
  ExecStartRequest,
  ExecStartResponse,
} from "./exec_routes.ts";
import type { BuildRequest, BuildUploadRequest, BuildUploadResponse } from "./build_routes.ts";
import type { ExportImageRequest, PullFromPeerRequest, PullFromPeerResponse } from "./routing_routes.ts";
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

/** How to reach a Machine. */
export interface ConnectOptions {
  /** The daemon's socket, e.g. `/run/ployz/ployz.sock`. */
  socketPath?: string;
  /** Another transport (an SSH bridge, or an app in-process for tests); used instead of the socket. */
  fetch?: (request: Request) => Promise<Response>;
  /** How errors name the target when the socket path does not fit; default the socket path. */
  label?: string;
  /** Path each call is posted to, before the capability; default `/rpc/` (see `viaEntry` for forwarding). */
  pathPrefix?: string;
  /** Called once by `close()`: releases what the transport holds (an SSH connection). */
  onClose?: () => void;
}

/** Per-call options. */
export interface CallOptions {
  /** Cancels the call; a caller bounds its own patience with it. */
  signal?: AbortSignal;
}

/** One Machine's RPC surface; one typed method per catalog row. */
export interface MachineClient extends Disposable {
  /** What the Machine serves: its id, name, protocol major, daemon version and capabilities. */
  describeContract(options?: CallOptions): Promise<DescribeContractResponse>;
  /** Founds a Cluster on this Machine; idempotent for the same Cluster. */
  init(request: InitRequest, options?: CallOptions): Promise<InitResponse>;
  /** The local Machine record and whether its Docker answers. */
  status(options?: CallOptions): Promise<StatusResponse>;
  /** Ployz-owned containers on the Machine, optionally filtered. */
  listContainers(request?: ListContainersRequest, options?: CallOptions): Promise<ListContainersResponse>;
  /** Finds the container by creation key, or admits and creates it; optionally starts it. */
  ensureContainer<S extends ContainerSpecDocument>(
    request: EnsureContainerRequest<S>,
    options?: CallOptions,
  ): Promise<EnsureContainerResponse>;
  /** The same, for a spec that ships files, with their content; only the Machine that runs the slot gets it. */
  ensureContainerWithFiles<S extends ContainerSpecDocument>(
    request: EnsureContainerWithFilesRequest<S>,
    options?: CallOptions,
  ): Promise<EnsureContainerResponse>;
  /** Starts an owned container. */
  startContainer(request: ContainerRefRequest, options?: CallOptions): Promise<ContainerResponse>;
  /** Stops an owned container. */
  stopContainer(request: StopContainerRequest, options?: CallOptions): Promise<ContainerResponse>;
  /** Takes a container out of every proxy (its Machine marks it leaving) and waits, bounded, for the acks. */
  leaveContainer(request: LeaveContainerRequest, options?: CallOptions): Promise<LeaveContainerResponse>;
  /** Removes an owned container; an absent one answers `removed: false`. */
  removeContainer(request: ContainerRefRequest, options?: CallOptions): Promise<RemoveContainerResponse>;
  /** Runs the health gate on the Machine and returns its verdict and evidence. */
  waitHealthy(request: WaitHealthyRequest, options?: CallOptions): Promise<WaitHealthyResponse>;
  /** Starts a command in an owned container (`ployz exec`); answers the session to attach to. */
  execStart(request: ExecStartRequest, options?: CallOptions): Promise<ExecStartResponse>;
  /** The session's output as NDJSON frames, then its exit code; one attach per session. */
  execAttach(request: ExecAttachRequest, options?: CallOptions): Promise<ReadableStream<Uint8Array>>;
  /** Sends stdin bytes, a terminal size or the end of stdin to a session. */
  execInput(request: ExecInputRequest, options?: CallOptions): Promise<ExecInputResponse>;
  /** Whether an image is on the Machine. */
  inspectImage(request: InspectImageRequest, options?: CallOptions): Promise<InspectImageResponse>;
  /** The digest the registry serves for a tag, asked through the Machine's Docker. */
  resolveImage(request: ResolveImageRequest, options?: CallOptions): Promise<ResolveImageResponse>;
  /** Starts or joins the Machine's pull of a pinned reference; answers with its progress. */
  pullImage(request: PullImageRequest, options?: CallOptions): Promise<PullImageResponse>;
  /** The Machine's images. */
  listImages(options?: CallOptions): Promise<ListImagesResponse>;
  /** Removes images Ployz pulled that no container uses. */
  pruneImages(request: PruneImagesRequest, options?: CallOptions): Promise<PruneImagesResponse>;
  /** Every Machine row the Machine holds, with its own membership judgement of each. */
  listMachines(options?: CallOptions): Promise<ListMachinesResponse>;
  /** Asks an uninitialized Machine to join a Cluster; it answers at once, in phase `joining`. */
  joinMachine(request: JoinRequest, options?: CallOptions): Promise<JoinResponse>;
  /** Asks the Entry Machine to accept a joiner's WireGuard handshakes before the joiner's row arrives. */
  admitPeer(request: AdmitPeerRequest, options?: CallOptions): Promise<AdmitPeerResponse>;
  /** Asks the Machine to leave its Cluster: it tombstones its own row and removes its interface. */
  leaveMachine(request: LeaveRequest, options?: CallOptions): Promise<LeaveResponse>;
  /** Asks the Machine to change its own Labels and acceptance flags. */
  configureMachine(
    request: ConfigureMachineRequest,
    options?: CallOptions,
  ): Promise<ConfigureMachineResponse>;
  /** Asks the Machine to mark a gone Machine retired in the Cluster's store. */
  retireMachine(request: RetireMachineRequest, options?: CallOptions): Promise<RetireMachineResponse>;
  /** Asks the Machine to upgrade itself from its own release source; a known request key finds its attempt. */
  upgradeMachine(request: UpgradeMachineRequest, options?: CallOptions): Promise<UpgradeMachineResponse>;
  /** Reads an upgrade attempt on the Machine. */
  upgradeStatus(request: UpgradeStatusRequest, options?: CallOptions): Promise<UpgradeStatusResponse>;
  /** The Machine's stored container output for a selector and window. */
  logHistory(request: LogHistoryRequest, options?: CallOptions): Promise<LogHistoryResponse>;
  /** The Machine's container output as it is stored, as NDJSON frames, until `options.signal` aborts. */
  tailLogs(request: TailLogsRequest, options?: CallOptions): Promise<ReadableStream<Uint8Array>>;
  /** The Machine's metric history for a Service, a Deployment or itself. */
  metricHistory(request: MetricHistoryRequest, options?: CallOptions): Promise<MetricHistoryResponse>;
  /** `docker save` of an image the Machine has, as a tar stream. */
  exportImage(request: ExportImageRequest, options?: CallOptions): Promise<ReadableStream<Uint8Array>>;
  /** Asks the Machine to fetch an image from a peer Machine over the mesh and load it. */
  pullImageFromPeer(request: PullFromPeerRequest, options?: CallOptions): Promise<PullFromPeerResponse>;
  /** Sends one piece of a build context to the Machine. */
  buildUpload(request: BuildUploadRequest, options?: CallOptions): Promise<BuildUploadResponse>;
  /** Builds an uploaded context; the answer is NDJSON build frames, the last `done` or `failed`. */
  buildImage(request: BuildRequest, options?: CallOptions): Promise<ReadableStream<Uint8Array>>;
  /** Moves a Service's Serving Pointer to a Deployment (a name-keyed, last-writer-wins row). */
  setPointer(request: SetPointerRequest, options?: CallOptions): Promise<SetPointerResponse>;
  /** A Serving Pointer and this Machine's view of its acks. */
  pointerStatus(request: PointerStatusRequest, options?: CallOptions): Promise<PointerStatusResponse>;
  /** Marks a Project or Service removed, or cancels its mark. */
  markRemoval(request: MarkRemovalRequest, options?: CallOptions): Promise<MarkRemovalResponse>;
  /** Removal marks and this Machine's view of their progress. */
  listRemovals(request: ListRemovalsRequest, options?: CallOptions): Promise<ListRemovalsResponse>;
  /** The certificate rows this Machine holds, without keys. */
  listCertificates(options?: CallOptions): Promise<CertificatesResponse>;
  /** Asks for a renewal of an ACME certificate. */
  renewCertificate(request: CertificateRequest, options?: CallOptions): Promise<CertificateResponse>;
  /** Adds an operator's certificate and key for a hostname. */
  addCertificate(request: AddCertificateRequest, options?: CallOptions): Promise<CertificateResponse>;
  /** Removes a hostname's certificate row. */
  removeCertificate(request: CertificateRequest, options?: CallOptions): Promise<CertificateResponse>;
  /** Serves a hostname from the Cluster's internal root (made first when there is none), issuing now. */
  addInternalCertificate(request: CertificateRequest, options?: CallOptions): Promise<CertificateResponse>;
  /** The Cluster's internal root certificate, without its key. */
  clusterRoot(options?: CallOptions): Promise<ClusterRootWire>;
  /** The Machine's Pool and the Volume copies in it; with `set`, binds the Machine to a Pool first. */
  machinePool(request: MachinePoolRequest, options?: CallOptions): Promise<MachinePoolResponse>;
  /** SetVolumeCopy: one Volume Run step, checked by the Machine against its own copy and floor. */
  setVolumeCopy(request: SetVolumeCopyRequest, options?: CallOptions): Promise<SetVolumeCopyResponse>;
  /** What this Machine's Ingress Proxy serves, as its serving loop last loaded it. */
  ingressStatus(request: IngressStatusRequest, options?: CallOptions): Promise<IngressStatusResponse>;
  /** The Containers mounting a Volume on the Machine, with their full specs. */
  volumeContainers(
    request: VolumeContainersRequest,
    options?: CallOptions,
  ): Promise<VolumeContainersResponse>;
  /**
   * Throws `unsupported` with `details.capability` unless the Machine's DescribeContract lists `capability`.
   * The contract is read once per client.
   */
  requireCapability(capability: string, options?: CallOptions): Promise<void>;
  /** Releases the connection pool. */
  close(): void;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** How a client sends: kept per client so a forwarding client can share its Entry Machine's connection pool. */
/** The routes that answer a stream rather than JSON. */
type StreamRoute = "tailLogs" | "exportImage" | "execAttach" | "sendVolume" | "buildImage";

const TRANSPORTS = new WeakMap<
  MachineClient,
  { send: (request: Request) => Promise<Response>; label: string }
>();

/** The transport of a client made by {@link connectMachine}, or `undefined` for any other object. */
export function transportOf(
  client: MachineClient,
): { send: (request: Request) => Promise<Response>; label: string } | undefined {
  return TRANSPORTS.get(client);
}

/**
 * Whether a request whose transport failed may have reached the Machine: anything but a failed connect, or a
 * transport that says it sent nothing (`details.sent === false`, e.g. an SSH connection that never came up).
 */
function mayHaveGoneOut(error: unknown): boolean {
  if (error instanceof CodedError && error.details.sent === false) return false;
  return !/\(Connect\)/.test(String(causeOf(error)));
}

/** Opens a client. Nothing is sent until the first call; a socket that does not answer fails that call. */
export function connectMachine(options: ConnectOptions): MachineClient {
  const label = options.label ?? options.socketPath ?? "machine";
  let httpClient: Deno.HttpClient | undefined;
  let send: (request: Request) => Promise<Response>;
  if (options.fetch !== undefined) {
    send = options.fetch;
  } else if (options.socketPath !== undefined) {
    const client = Deno.createHttpClient({ proxy: { transport: "unix", path: options.socketPath } });
    httpClient = client;
    send = (request) => fetch(request, { client });
  } else {
    throw new RpcError("invalid_argument", "Cannot connect to a Machine: give a socket path or a transport");
  }
  let contract: Promise<DescribeContractResponse> | undefined;
  let onClose = options.onClose;
  function release(): void {
    httpClient?.close();
    httpClient = undefined;
    const close = onClose;
    onClose = undefined;
    close?.();
  }
  const prefix = options.pathPrefix ?? "/rpc/";

  async function post(name: RouteName, fields: object, signal?: AbortSignal): Promise<Response> {
    const capability = CATALOG[name].capability;
    let response: Response;
    try {
      response = await send(
        new Request(`http://localhost${prefix}${capability}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(envelope(fields)),
          signal,
        }),
      );
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw new RpcError(
        "unavailable",
        `Cannot reach the Machine RPC socket "${label}": ${messageOf(error)}`,
        {
          // Whether the request may have gone out: anything but a failed connect. The deploy executor reports
          // such a call as "outcome unknown", never as a clean failure.
          details: { capability, socket: label, "no_answer": mayHaveGoneOut(error) },
          cause: error,
        },
      );
    }
    if (response.ok) return response;
    const text = await response.text().catch(() => "");
    let parsed;
    try {
      parsed = ErrorBodySchema.safeParse(JSON.parse(text));
    } catch {
      parsed = undefined;
    }
    if (parsed?.success) {
      const { code, message, details } = parsed.data.error;
      throw new RpcError(isRpcErrorCode(code) ? code : "internal", message, {
        details: { capability, ...details, ...(isRpcErrorCode(code) ? {} : { "received_code": code }) },
      });
    }
    throw new RpcError(
      "internal",
      `Machine "${label}" answered "${capability}" with status ${response.status} and no error body`,
      { details: { capability, status: response.status } },
    );
  }

  /** A streamed answer's body; an answer without one is an empty stream. */
  async function stream(
    name: StreamRoute,
    fields: object,
    signal?: AbortSignal,
  ): Promise<ReadableStream<Uint8Array>> {
    const response = await post(name, fields, signal);
    return response.body ?? new ReadableStream({ start: (c) => c.close() });
  }

  async function call<K extends Exclude<RouteName, StreamRoute | "forward">>(
    name: K,
    fields: object,
    signal?: AbortSignal,
  ): Promise<RouteTypes[K][1]> {
    const route = CATALOG[name];
    const response = await post(name, fields, signal);
    let body: unknown;
    try {
      body = await response.json();
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw new RpcError(
        "internal",
        `Machine "${label}" answered "${route.capability}" with a body that is not JSON`,
        {
          details: { capability: route.capability },
          cause: error,
        },
      );
    }
    if (route.response === "stream") return body as RouteTypes[K][1];
    const checked = route.response.safeParse(body);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      throw new RpcError(
        "internal",
        `Machine "${label}" answered "${route.capability}" with a malformed body: field "${
          issue.path.join(".")
        }": ${issue.message}`,
        { details: { capability: route.capability } },
      );
    }
    return checked.data as RouteTypes[K][1];
  }

  function describe(signal?: AbortSignal): Promise<DescribeContractResponse> {
    if (contract === undefined) {
      contract = call("describeContract", {}, signal);
      contract.catch(() => contract = undefined);
    }
    return contract;
  }

  const client: MachineClient = {
    describeContract: async (o) => {
      const answer = await call("describeContract", {}, o?.signal);
      contract = Promise.resolve(answer);
      return answer;
    },
    init: (req, o) => call("init", req, o?.signal),
    status: (o) => call("status", {}, o?.signal),
    listContainers: (req = {}, o) => call("listContainers", req, o?.signal),
    ensureContainer: (req, o) => call("ensureContainer", req, o?.signal),
    ensureContainerWithFiles: (req, o) => call("ensureContainerWithFiles", req, o?.signal),
    startContainer: (req, o) => call("startContainer", req, o?.signal),
    stopContainer: (req, o) => call("stopContainer", req, o?.signal),
    leaveContainer: (req, o) => call("leaveContainer", req, o?.signal),
    removeContainer: (req, o) => call("removeContainer", req, o?.signal),
    waitHealthy: (req, o) => call("waitHealthy", req, o?.signal),
    inspectImage: (req, o) => call("inspectImage", req, o?.signal),
    resolveImage: (req, o) => call("resolveImage", req, o?.signal),
    pullImage: (req, o) => call("pullImage", req, o?.signal),
    listImages: (o) => call("listImages", {}, o?.signal),
    pruneImages: (req, o) => call("pruneImages", req, o?.signal),
    execStart: (req, o) => call("execStart", req, o?.signal),
    execAttach: (req, o) => stream("execAttach", req, o?.signal),
    execInput: (req, o) => call("execInput", req, o?.signal),
    listMachines: (o) => call("listMachines", {}, o?.signal),
    joinMachine: (req, o) => call("joinMachine", req, o?.signal),
    admitPeer: (req, o) => call("admitPeer", req, o?.signal),
    leaveMachine: (req, o) => call("leaveMachine", req, o?.signal),
    configureMachine: (req, o) => call("configureMachine", req, o?.signal),
    retireMachine: (req, o) => call("retireMachine", req, o?.signal),
    upgradeMachine: (req, o) => call("upgradeMachine", req, o?.signal),
    upgradeStatus: (req, o) => call("upgradeStatus", req, o?.signal),
    logHistory: (req, o) => call("logHistory", req, o?.signal),
    tailLogs: (req, o) => stream("tailLogs", req, o?.signal),
    metricHistory: (req, o) => call("metricHistory", req, o?.signal),
    exportImage: (req, o) => stream("exportImage", req, o?.signal),
    pullImageFromPeer: (req, o) => call("pullImageFromPeer", req, o?.signal),
    buildUpload: (req, o) => call("buildUpload", req, o?.signal),
    buildImage: (req, o) => stream("buildImage", req, o?.signal),
    setPointer: (req, o) => call("setPointer", req, o?.signal),
    pointerStatus: (req, o) => call("pointerStatus", req, o?.signal),
    markRemoval: (req, o) => call("markRemoval", req, o?.signal),
    listRemovals: (req, o) => call("listRemovals", req, o?.signal),
    listCertificates: (o) => call("listCertificates", {}, o?.signal),
    renewCertificate: (req, o) => call("renewCertificate", req, o?.signal),
    addCertificate: (req, o) => call("addCertificate", req, o?.signal),
    removeCertificate: (req, o) => call("removeCertificate", req, o?.signal),
    addInternalCertificate: (req, o) => call("addInternalCertificate", req, o?.signal),
    clusterRoot: (o) => call("clusterRoot", {}, o?.signal),
    machinePool: (req, o) => call("machinePool", req, o?.signal),
    setVolumeCopy: (req, o) => call("setVolumeCopy", req, o?.signal),
    ingressStatus: (req, o) => call("ingressStatus", req, o?.signal),
    volumeContainers: (req, o) => call("volumeContainers", req, o?.signal),
    async requireCapability(capability, o): Promise<void> {
      const served = await describe(o?.signal);
      if (served.capabilities.includes(capability)) return;
      throw new RpcError(
        "unsupported",
        `Machine "${served.machine_name}" does not serve "${capability}": upgrade its daemon`,
        { details: { capability, "machine_id": served.machine_id } },
      );
    },
    close(): void {
      release();
    },
    [Symbol.dispose](): void {
      release();
    },
  };
  TRANSPORTS.set(client, { send, label });
  return client;
}

function causeOf(error: unknown): unknown {
  return error instanceof Error && error.cause !== undefined ? error.cause : error;
}
