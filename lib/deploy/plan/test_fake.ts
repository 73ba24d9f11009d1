// An in-memory Machine for unit tests of planning and execution (pure logic only; e2e tests use the daemon).
import type { ContainerSpec } from "../docker/spec.ts";
import { specDigest } from "../docker/spec.ts";
import type {
  MachineApi,
  ObservedContainerView,
  ServingPointerView,
  WaitHealthyAnswer,
} from "./machine_api.ts";
import type { NormalizedPort, NormalizedProject, NormalizedService } from "../compose/types.ts";
import type { Snapshot } from "./snapshot.ts";
import { CodedError } from "../../util/mod.ts";

/** A ContainerSpec of slot 1 of `shop`'s Service `web` with only the fields every spec has, `fields` replacing them. */
export function containerSpec(fields: Partial<ContainerSpec> = {}): ContainerSpec {
  return {
    name: "shop-web-1",
    creationKey: "k",
    project: "shop",
    service: "web",
    deployment: "d",
    slot: "1",
    image: "img:1",
    ...fields,
  };
}

/** How a Machine would observe a container made from `spec`, running, with `fields` replacing what they name. */
export function observedOf(
  spec: ContainerSpec,
  fields: Partial<ObservedContainerView> = {},
): ObservedContainerView {
  return {
    id: spec.name,
    name: spec.name,
    project: spec.project,
    service: spec.service,
    deployment: spec.deployment,
    slot: spec.slot,
    "creation_key": spec.creationKey,
    "spec_digest": specDigest(spec),
    image: spec.image,
    "image_id": "sha256:x",
    state: "running",
    health: "none",
    "started_at": null,
    "exit_code": null,
    "start_error": null,
    addresses: [],
    ports: [],
    "env_names": [],
    "created_at": null,
    ...fields,
  };
}

/**
 * A Machine's containers in a map and a call log, with knobs for health, hook exits and failed creations: the part
 * of Machine RPC every fake Machine answers alike (this area's {@linkcode FakeMachine} and the operator's).
 */
export class FakeContainers {
  containers = new Map<string, ObservedContainerView>();
  calls: string[] = [];
  /** Decides the health gate of a container by name. */
  healthy: (c: ObservedContainerView) => boolean = () => true;
  /** Exit code of hook containers. */
  hookExit = 0;
  /** Fails `ensureContainer` for specs whose name matches. */
  failEnsure: RegExp | undefined;
  #next = 1;

  constructor(readonly id: string, readonly name: string) {}

  /** Adds an observed container built from `spec`. */
  add(spec: ContainerSpec, state = "running"): ObservedContainerView {
    const c = observedOf(spec, {
      id: `${this.id}-c${this.#next++}`,
      state,
      "exit_code": state === "exited" ? 0 : null,
      "created_at": new Date(Date.now() + this.#next).toISOString(),
    });
    this.containers.set(c.id, c);
    return c;
  }

  listContainers(
    r: { project?: string; service?: string; deployment?: string },
  ): Promise<{ "machine_id": string; "observed_at": string; containers: ObservedContainerView[] }> {
    const containers = [...this.containers.values()].filter((c) =>
      (r.project === undefined || c.project === r.project) &&
      (r.service === undefined || c.service === r.service) &&
      (r.deployment === undefined || c.deployment === r.deployment)
    ).map((c) => ({ ...c }));
    return Promise.resolve({ "machine_id": this.id, "observed_at": "t", containers });
  }
  ensureContainer(
    r: { spec: ContainerSpec; start: boolean },
  ): Promise<{ container: ObservedContainerView; created: boolean; started: boolean }> {
    this.calls.push(`ensure ${r.spec.name}`);
    if (this.failEnsure?.test(r.spec.name)) {
      return Promise.reject(new CodedError("conflict", `Port is already allocated: "${r.spec.name}"`));
    }
    const found = [...this.containers.values()].find((c) => c.creation_key === r.spec.creationKey);
    if (found !== undefined) {
      return Promise.resolve({ container: { ...found }, created: false, started: false });
    }
    const c = this.add(r.spec, r.start ? "running" : "created");
    if (r.spec.slot === "hook" || r.spec.slot === "run") {
      c.state = "exited";
      c.exit_code = this.hookExit;
    }
    return Promise.resolve({ container: { ...c }, created: true, started: r.start });
  }
  startContainer(r: { id: string }): Promise<{ container: ObservedContainerView }> {
    this.calls.push(`start ${this.containers.get(r.id)?.name}`);
    const c = this.containers.get(r.id)!;
    c.state = "running";
    return Promise.resolve({ container: { ...c } });
  }
  stopContainer(r: { id: string }): Promise<{ container: ObservedContainerView }> {
    this.calls.push(`stop ${this.containers.get(r.id)?.name}`);
    const c = this.containers.get(r.id)!;
    if (c.state === "running") {
      c.state = "exited";
      c.exit_code = 137;
    }
    return Promise.resolve({ container: { ...c } });
  }
  removeContainer(r: { id: string }): Promise<{ id: string; removed: boolean }> {
    this.calls.push(`remove ${this.containers.get(r.id)?.name}`);
    return Promise.resolve({ id: r.id, removed: this.containers.delete(r.id) });
  }
  waitHealthy(r: { id: string }): Promise<WaitHealthyAnswer> {
    const c = this.containers.get(r.id)!;
    this.calls.push(`health ${c.name}`);
    const passed = this.healthy(c);
    return Promise.resolve({
      passed,
      reason: passed ? undefined : "unhealthy",
      message: passed ? undefined : `Container "${c.name}" is unhealthy`,
      evidence: {
        state: c.state,
        health: passed ? "healthy" : "unhealthy",
        "exit_code": null,
        "oom_killed": false,
        "restart_count": 0,
        "started_at": null,
        "last_error": null,
        "health_log": [],
      },
    });
  }
}

/** A fake Machine: {@linkcode FakeContainers}, its images, Serving Pointers, Pool and record, and hook output. */
export class FakeMachine extends FakeContainers implements MachineApi {
  images = new Set<string>(["img:1", "img:2"]);
  /** Serving Pointers by `project/service`. */
  pointers = new Map<string, ServingPointerView>();
  /** Fails `setPointer` with this error. */
  failPointer: Error | undefined;

  /** What the Machine's record says about ingress. */
  acceptsIngress = true;
  /** What the Machine's record says about workloads. */
  acceptsWorkloads = true;
  /** Its Machine Labels. */
  labels: Record<string, string> = {};
  /** The Volume copies its Pool holds, or the error `machinePool` answers. */
  pool: { name: string; role: string; snapshot?: string; epoch?: number }[] | Error = [];

  constructor(id = "m1", name = "one") {
    super(id, name);
  }

  /** `ployz.machine.pool.v1`: the copies in {@linkcode pool}. */
  machinePool(_request: Record<string, never>): Promise<{ volumes: { name: string; role: string }[] }> {
    this.calls.push("machinePool");
    return this.pool instanceof Error ? Promise.reject(this.pool) : Promise.resolve({ volumes: this.pool });
  }

  /** The Docker network its record names; unset, the record names none (an older daemon). */
  network?: string;

  status(): Promise<
    { machine: { id: string; name: string; phase: string; "docker_network"?: string }; "observed_at": string }
  > {
    return Promise.resolve({
      machine: {
        id: this.id,
        name: this.name,
        phase: "participating",
        ...(this.network === undefined ? {} : { "docker_network": this.network }),
      },
      "observed_at": "t",
    });
  }
  /** A hook's output, which reaches the Observe Store one line per read, as a slow copy would. */
  hookOutput = ["running migration 7", "migration failed"];
  #logReads = 0;
  logHistory(): Promise<{ lines: { text: string }[] }> {
    const stored = this.hookOutput.slice(0, this.#logReads++);
    return Promise.resolve({ lines: stored.map((text) => ({ text })) });
  }
  inspectImage(r: { ref: string }): Promise<{ present: boolean; id?: string }> {
    return Promise.resolve({ present: this.images.has(r.ref) });
  }
  /** Peers the fake can copy from, by Machine id; a missing peer or image fails like the daemon. */
  peers = new Map<string, FakeMachine>();
  pullImageFromPeer(
    r: { ref: string; "from_machine_id": string },
  ): Promise<{ transferred: boolean; bytes: number; "duration_ms": number }> {
    this.calls.push(`pull ${r.ref} from ${r.from_machine_id}`);
    if (this.images.has(r.ref)) return Promise.resolve({ transferred: false, bytes: 0, "duration_ms": 0 });
    const peer = this.peers.get(r.from_machine_id);
    if (peer === undefined || !peer.images.has(r.ref)) {
      return Promise.reject(
        new CodedError("unavailable", `Machine "${r.from_machine_id}" cannot give image "${r.ref}"`),
      );
    }
    this.images.add(r.ref);
    return Promise.resolve({ transferred: true, bytes: 1000, "duration_ms": 5 });
  }
  setPointer(
    r: { project: string; service: string; deployment: string },
  ): Promise<{ pointer: ServingPointerView; previous?: ServingPointerView }> {
    this.calls.push(`point ${r.project}/${r.service} ${r.deployment}`);
    if (this.failPointer !== undefined) return Promise.reject(this.failPointer);
    const key = `${r.project}/${r.service}`;
    const previous = this.pointers.get(key);
    const pointer = { ...r, version: (previous?.version ?? 0) + 1 };
    this.pointers.set(key, pointer);
    return Promise.resolve(previous === undefined ? { pointer } : { pointer, previous });
  }
}

/** Host port 8080 published to the container's port 80 over TCP, the tests' one fixed host port. */
export const HOST_8080: NormalizedPort = {
  kind: "host",
  hostIp: null,
  publishedPort: 8080,
  containerPort: 80,
  protocol: "tcp",
};

/** A Service with every default. */
export function service(name: string, fields: Partial<NormalizedService> = {}): NormalizedService {
  return {
    name,
    image: "img:1",
    mode: "replicated",
    replicas: 1,
    command: null,
    entrypoint: null,
    environment: {},
    labels: {},
    ports: [],
    mounts: [],
    healthcheck: { kind: "image" },
    restart: "no",
    user: null,
    workingDir: null,
    hostname: null,
    extraHosts: [],
    capAdd: [],
    capDrop: [],
    privileged: false,
    init: null,
    tty: false,
    stdinOpen: false,
    sysctls: {},
    stopGracePeriodMs: null,
    stopSignal: null,
    pullPolicy: "missing",
    logging: { driver: "local", options: {} },
    resources: {
      nanoCpus: null,
      memoryBytes: null,
      memoryReservationBytes: null,
      shmSizeBytes: null,
      ulimits: {},
    },
    dependsOn: [],
    profiles: [],
    update: { order: null, monitorMs: null },
    machines: [],
    caddy: null,
    preDeploy: null,
    ...fields,
  };
}

/** A Project of `services`. */
export function project(services: NormalizedService[], name = "shop"): NormalizedProject {
  return {
    name,
    context: null,
    services: Object.fromEntries(services.map((s) => [s.name, s])),
    volumes: {
      data: {
        name: "data",
        external: false,
        dockerName: `${name}_data`,
        driver: null,
        driverOptions: {},
        labels: {},
        sizeBytes: null,
      },
    },
  };
}

/** A Snapshot of one fake Machine. */
export async function snapshotOf(
  machine: FakeMachine,
  projectName = "shop",
  ingress?: { project: string; service: string },
): Promise<Snapshot> {
  return await snapshotOfAll([machine], projectName, ingress);
}

/** A Snapshot of several fake Machines, in order. */
export async function snapshotOfAll(
  machines: FakeMachine[],
  projectName = "shop",
  ingress?: { project: string; service: string },
): Promise<Snapshot> {
  const refs = new Set(["img:1", "img:2", "img:missing", ...machines.flatMap((m) => [...m.images])]);
  const observed = await Promise.all(machines.map(async (machine) => {
    const list = await machine.listContainers({ project: projectName });
    const proxies = ingress === undefined ? undefined : (await machine.listContainers(ingress)).containers;
    return {
      machineId: machine.id,
      machineName: machine.name,
      phase: "participating",
      observedAt: "t",
      containers: list.containers,
      images: Object.fromEntries([...refs].map((i) => [i, machine.images.has(i)])),
      acceptsIngress: machine.acceptsIngress,
      acceptsWorkloads: machine.acceptsWorkloads,
      labels: machine.labels,
      ...(proxies === undefined ? {} : { ingress: proxies }),
    };
  }));
  return { project: projectName, observedAt: "t", machines: observed, failures: [], omissions: [] };
}
