/**
 * The slice of Machine RPC a Deploy uses, as plain types. `lib/rpc`'s `MachineClient` satisfies it
 * structurally; keeping the types here lets planning and execution stay free of the transport, and lets unit
 * tests of the pure logic pass a small in-memory fake. Wire fields are snake_case, as they travel.
 *
 * @module
 */

import type { RegistryAuth } from "../docker/client.ts";
import type { ContainerSpec } from "../docker/spec.ts";

/** One Ployz-owned container as its Machine observed it (`ployz.container.list.v1`). */
export interface ObservedContainerView {
  /** Docker's container id. */
  id: string;
  /** Container name. */
  name: string;
  /** Label `ployz.project`. */
  project: string;
  /** Label `ployz.service`. */
  service: string;
  /** Label `ployz.deployment`. */
  deployment: string;
  /** Label `ployz.slot`. */
  slot: string;
  /** The key its creator minted. */
  "creation_key": string;
  /** `specDigest` of the spec it was created from. */
  "spec_digest": string;
  /** Image reference. */
  image: string;
  /** Id of the image it runs. */
  "image_id": string;
  /** Docker's state. */
  state: string;
  /** `none`, `starting`, `healthy` or `unhealthy`. */
  health: string;
  /** When it last started. */
  "started_at": string | null;
  /** Exit code once stopped. */
  "exit_code": number | null;
  /** Docker's record of a failed start. */
  "start_error": string | null;
  /** Addresses on the Machine's network. */
  addresses: string[];
  /** Published ports. */
  ports: { "container_port": number; protocol: string; "host_ip": string; "host_port": number }[];
  /** Environment names; values stay on the Machine. */
  "env_names": string[];
  /** When Docker created it. */
  "created_at": string | null;
}

/** The Machine record (`ployz.machine.status.v1`). */
export interface MachineRecordView {
  /** Machine id. */
  id: string;
  /** Machine Name. */
  name: string;
  /** `uninitialized` or `participating` (newer daemons may add phases). */
  phase: string;
  /** Cluster id once initialized. */
  "cluster_id"?: string;
  /** Cluster name once initialized. */
  "cluster_name"?: string;
  /** Machine subnet once initialized. */
  subnet?: string;
  /** False when the Machine's record refuses ingress; absent means it accepts ingress. */
  "accepts_ingress"?: boolean;
  /** False when the Machine's record refuses new workloads; absent means it accepts them. */
  "accepts_workloads"?: boolean;
  /** Its Machine Labels; absent from older daemons. */
  labels?: Record<string, string>;
  /** The Docker bridge network its containers join; absent from older daemons. */
  "docker_network"?: string;
}

/** A Serving Pointer as a Machine answers it. */
export interface ServingPointerView {
  /** Project name. */
  project: string;
  /** Service name. */
  service: string;
  /** The Deployment whose containers take traffic. */
  deployment: string;
  /** Grows with each move. */
  version?: number;
}

/** The health gate's answer (`ployz.container.wait_healthy.v1`). */
export interface WaitHealthyAnswer {
  /** True when the container passed. */
  passed: boolean;
  /** How it passed. */
  via?: string;
  /** Why it failed. */
  reason?: string;
  /** One sentence naming the container and the evidence. */
  message?: string;
  /** What the gate last saw. */
  evidence: HealthEvidenceView;
}

/** What the health gate last saw, as the Machine reported it. */
export interface HealthEvidenceView {
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
  "health_log": { "exit_code": number | null; output: string; "ended_at": string | null }[];
}

/** The Machine RPC methods a Deploy calls on one Machine. */
export interface MachineApi {
  /** `ployz.machine.status.v1`. */
  status(): Promise<{ machine: MachineRecordView; "observed_at": string }>;
  /** `ployz.container.list.v1`. */
  listContainers(
    request: { project?: string; service?: string; deployment?: string },
  ): Promise<{ "machine_id": string; "observed_at": string; containers: ObservedContainerView[] }>;
  /** `ployz.container.ensure.v1`. */
  ensureContainer(
    request: { spec: ContainerSpec; start: boolean },
  ): Promise<{ container: ObservedContainerView; created: boolean; started: boolean }>;
  /** `ployz.container.start.v1`. */
  startContainer(request: { id: string }): Promise<{ container: ObservedContainerView }>;
  /** `ployz.container.stop.v1`. */
  stopContainer(
    request: { id: string; "grace_seconds"?: number },
  ): Promise<{ container: ObservedContainerView }>;
  /** `ployz.container.remove.v1`. */
  removeContainer(request: { id: string }): Promise<{ id: string; removed: boolean }>;
  /** `ployz.serving.ingress_status.v1`; absent on a client that cannot ask it. */
  ingressStatus?(request: Record<string, never>): Promise<{ "proxy_id": string | null; routed: string[] }>;
  /** `ployz.container.leave.v1`; absent on a client that cannot ask it. */
  leaveContainer?(
    request: { id: string; "wait_ms": number },
  ): Promise<
    {
      id: string;
      live: boolean;
      acked: string[];
      missing: string[];
      "waited_ms": number;
      "drained_ms"?: number;
      "in_flight"?: number;
    }
  >;
  /** `ployz.container.wait_healthy.v1`. */
  waitHealthy(
    request: { id: string; "deadline_ms": number; "monitor_ms": number },
  ): Promise<WaitHealthyAnswer>;
  /** `ployz.observe.log_history.v1`: the newest `limit` lines the Machine's Observe Store holds of a container. */
  logHistory(
    request: { selector: { container: string }; since: string; limit: number },
  ): Promise<{ lines: { text: string; partial?: boolean }[] }>;
  /** `ployz.image.inspect.v1`. */
  inspectImage(
    request: { ref: string },
  ): Promise<{ present: boolean; id?: string; "repo_digests"?: string[] }>;
  /** `ployz.image.pull.v1`: start or join the Machine's pull task; absent on a client that cannot ask it. */
  pullImage?(
    request: { ref: string; auth?: RegistryAuth; "wait_ms"?: number },
  ): Promise<{
    state: "present" | "running" | "done" | "failed";
    layers: number;
    "layers_done": number;
    bytes: number;
    "bytes_total": number;
    "duration_ms": number;
    error?: { code: string; message: string };
  }>;
  /** `ployz.image.resolve.v1`: the digest the registry serves; absent on a client that cannot ask it. */
  resolveImage?(
    request: { ref: string; auth?: RegistryAuth },
    options?: { signal?: AbortSignal },
  ): Promise<{ ref: string; digest: string }>;
  /** `ployz.image.pull_from_peer.v1`; absent on a client that cannot ask it. */
  pullImageFromPeer?(
    request: { ref: string; "from_machine_id": string; "timeout_ms"?: number },
  ): Promise<{ transferred: boolean; bytes: number; "duration_ms": number }>;
  /** `ployz.machine.pool.v1`: the Machine's Pool and its Volume copies; absent on a client that cannot ask it. */
  machinePool?(
    request: Record<string, never>,
  ): Promise<{ volumes: { name: string; role: string; snapshot?: string; epoch?: number }[] }>;
  /** `ployz.serving.set_pointer.v1`; absent on a client that cannot ask it. */
  setPointer?(
    request: { project: string; service: string; deployment: string },
  ): Promise<{ pointer: ServingPointerView; previous?: ServingPointerView }>;
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
