/**
 * The slice of Machine RPC a Deploy uses. `lib/rpc`'s `MachineClient` satisfies it structurally; the records are
 * the catalog's own wire types (imported as types only, so planning and execution stay free of the transport),
 * and unit tests of the pure logic pass a small in-memory fake. Wire fields are snake_case, as they travel.
 *
 * @module
 */

import type {
  ContainerRefRequest,
  ContainerResponse,
  EnsureContainerRequest,
  EnsureContainerResponse,
  HealthEvidenceWire,
  IngressStatusResponse,
  InspectImageRequest,
  InspectImageResponse,
  LeaveContainerRequest,
  LeaveContainerResponse,
  ListContainersRequest,
  ListContainersResponse,
  MachineRecord,
  ObservedContainerWire,
  PointerWire,
  PullFromPeerRequest,
  PullFromPeerResponse,
  PullImageRequest,
  PullImageResponse,
  RemoveContainerResponse,
  ResolveImageRequest,
  ResolveImageResponse,
  SetPointerRequest,
  SetPointerResponse,
  StopContainerRequest,
  WaitHealthyRequest,
  WaitHealthyResponse,
} from "../../rpc/mod.ts";
import type { ContainerSpec } from "../docker/spec.ts";

/** One Ployz-owned container as its Machine observed it (`ployz.container.list.v1`). */
export type ObservedContainerView = ObservedContainerWire;

/** The Machine record (`ployz.machine.status.v1`). */
export type MachineRecordView = MachineRecord;

/** A Serving Pointer as a Machine answers it. */
export type ServingPointerView = PointerWire;

/** The health gate's answer (`ployz.container.wait_healthy.v1`). */
export type WaitHealthyAnswer = WaitHealthyResponse;

/** What the health gate last saw, as the Machine reported it. */
export type HealthEvidenceView = HealthEvidenceWire;

/** The Machine RPC methods a Deploy calls on one Machine; answers narrowed to what a Deploy reads. */
export interface MachineApi {
  /** `ployz.machine.status.v1`. */
  status(): Promise<{ machine: MachineRecordView; "observed_at": string }>;
  /** `ployz.container.list.v1`. */
  listContainers(request: ListContainersRequest): Promise<ListContainersResponse>;
  /** `ployz.container.ensure.v1`. */
  ensureContainer(request: EnsureContainerRequest<ContainerSpec>): Promise<EnsureContainerResponse>;
  /** `ployz.container.start.v1`. */
  startContainer(request: ContainerRefRequest): Promise<ContainerResponse>;
  /** `ployz.container.stop.v1`. */
  stopContainer(request: StopContainerRequest): Promise<ContainerResponse>;
  /** `ployz.container.remove.v1`. */
  removeContainer(request: ContainerRefRequest): Promise<RemoveContainerResponse>;
  /** `ployz.serving.ingress_status.v1`; absent on a client that cannot ask it. */
  ingressStatus?(request: Record<string, never>): Promise<IngressStatusResponse>;
  /** `ployz.container.leave.v1`; absent on a client that cannot ask it. */
  leaveContainer?(request: LeaveContainerRequest): Promise<LeaveContainerResponse>;
  /** `ployz.container.wait_healthy.v1`. */
  waitHealthy(request: WaitHealthyRequest): Promise<WaitHealthyAnswer>;
  /** `ployz.observe.log_history.v1`: the newest `limit` lines the Machine's Observe Store holds of a container. */
  logHistory(
    request: { selector: { container: string }; since: string; limit: number },
  ): Promise<{ lines: { text: string; partial?: boolean }[] }>;
  /** `ployz.image.inspect.v1`. */
  inspectImage(request: InspectImageRequest): Promise<InspectImageResponse>;
  /** `ployz.image.pull.v1`: start or join the Machine's pull task; absent on a client that cannot ask it. */
  pullImage?(request: PullImageRequest): Promise<Omit<PullImageResponse, "machine_id" | "ref">>;
  /** `ployz.image.resolve.v1`: the digest the registry serves; absent on a client that cannot ask it. */
  resolveImage?(
    request: ResolveImageRequest,
    options?: { signal?: AbortSignal },
  ): Promise<ResolveImageResponse>;
  /** `ployz.image.pull_from_peer.v1`; absent on a client that cannot ask it. */
  pullImageFromPeer?(
    request: PullFromPeerRequest,
  ): Promise<Pick<PullFromPeerResponse, "transferred" | "bytes" | "duration_ms">>;
  /** `ployz.machine.pool.v1`: the Machine's Pool and its Volume copies; absent on a client that cannot ask it. */
  machinePool?(
    request: Record<string, never>,
  ): Promise<{ volumes: { name: string; role: string; snapshot?: string; epoch?: number }[] }>;
  /** `ployz.serving.set_pointer.v1`; absent on a client that cannot ask it. */
  setPointer?(request: SetPointerRequest): Promise<SetPointerResponse>;
}

/** A Machine a Deploy can reach, with its identity as first observed. */
export interface MachineHandle {
  /** Machine id. */
  id: string;
  /** Machine Name. */
  name: string;
  /** Its RPC client. */
  api: MachineApi;
}
