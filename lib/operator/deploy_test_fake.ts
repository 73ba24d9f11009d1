// An in-memory Cluster for unit tests of the operator's Deploy flows: Machines answering the Deploy's slice of
// Machine RPC, a capability list per Machine, and Saved State and Deployment records in memory.
import type {
  ContainerSpec,
  DeployEvent,
  NormalizedProject,
  ObservedContainerView,
  Outcome,
  Plan,
  WaitHealthyAnswer,
} from "../deploy/mod.ts";
import { loadCompose, specDigest } from "../deploy/mod.ts";
import { CAPABILITIES } from "../rpc/mod.ts";
import type { SavedState } from "../store/mod.ts";
import { CodedError } from "../util/mod.ts";
import type { DeployBook, DeployReport } from "./deploy_flow.ts";
import type { DeployMachineApi, DeployMachines } from "./deploy_machines.ts";

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

/** A fake Machine: containers in a map, a call log, knobs for failures and missing capabilities. */
export class FakeMachine implements DeployMachineApi {
  containers = new Map<string, ObservedContainerView>();
  calls: string[] = [];
  images = new Set<string>(["app:1"]);
  /** Capabilities this Machine's daemon does not serve. */
  missing = new Set<string>();
  /** Fails `ensureContainer` for specs whose name matches. */
  failEnsure: RegExp | undefined;
  /** Fails `status` (the Machine cannot be observed). */
  down: Error | undefined;
  #next = 1;

  constructor(readonly id: string, readonly name: string) {}

  status(): ReturnType<DeployMachineApi["status"]> {
    if (this.down !== undefined) return Promise.reject(this.down);
    return Promise.resolve({
      machine: { id: this.id, name: this.name, phase: "participating", "accepts_ingress": false },
      "observed_at": "t",
    });
  }
  listContainers(r: { project?: string; service?: string }): ReturnType<DeployMachineApi["listContainers"]> {
    const containers = [...this.containers.values()].filter((c) =>
      (r.project === undefined || c.project === r.project) &&
      (r.service === undefined || c.service === r.service)
    ).map((c) => ({ ...c }));
    return Promise.resolve({ "machine_id": this.id, "observed_at": "t", containers });
  }
  ensureContainer(
    r: { spec: ContainerSpec; start: boolean },
  ): ReturnType<DeployMachineApi["ensureContainer"]> {
    this.calls.push(`ensure ${r.spec.name}`);
    if (this.failEnsure?.test(r.spec.name)) {
      return Promise.reject(new CodedError("conflict", `Port is already allocated: "${r.spec.name}"`));
    }
    const found = [...this.containers.values()].find((c) => c.creation_key === r.spec.creationKey);
    if (found !== undefined) {
      return Promise.resolve({ container: { ...found }, created: false, started: false });
    }
    const c = observedOf(r.spec, {
      id: `${this.id}-c${this.#next++}`,
      state: r.start ? "running" : "created",
      "created_at": new Date().toISOString(),
    });
    this.containers.set(c.id, c);
    return Promise.resolve({ container: { ...c }, created: true, started: r.start });
  }
  ensureContainerWithFiles(
    r: { spec: ContainerSpec; start: boolean; files: Record<string, string> },
  ): ReturnType<DeployMachineApi["ensureContainer"]> {
    this.calls.push(`files ${Object.keys(r.files).join(",")}`);
    return this.ensureContainer(r);
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
    c.state = "exited";
    return Promise.resolve({ container: { ...c } });
  }
  removeContainer(r: { id: string }): Promise<{ id: string; removed: boolean }> {
    this.calls.push(`remove ${this.containers.get(r.id)?.name}`);
    return Promise.resolve({ id: r.id, removed: this.containers.delete(r.id) });
  }
  waitHealthy(r: { id: string }): Promise<WaitHealthyAnswer> {
    const c = this.containers.get(r.id)!;
    this.calls.push(`health ${c.name}`);
    return Promise.resolve({
      passed: true,
      evidence: {
        state: c.state,
        health: "healthy",
        "exit_code": null,
        "oom_killed": false,
        "restart_count": 0,
        "started_at": null,
        "last_error": null,
        "health_log": [],
      },
    });
  }
  logHistory(): Promise<{ lines: { text: string }[] }> {
    return Promise.resolve({ lines: [] });
  }
  inspectImage(r: { ref: string }): Promise<{ present: boolean; id?: string; "repo_digests"?: string[] }> {
    if (!this.images.has(r.ref)) return Promise.resolve({ present: false });
    return Promise.resolve({ present: true, "repo_digests": this.repoDigests.get(r.ref) ?? [] });
  }
  /** Registry digests of images here, by reference. */
  repoDigests = new Map<string, string[]>();
  /** The registry as this Machine's Docker reaches it: digests by reference, or the error it answers. */
  registry: Map<string, string> | Error = new Map();
  /** Every pull fails with this while it is set (the registry went away mid-pull). */
  failPull: CodedError | undefined;
  /** Credentials seen with each registry request. */
  auths: (string | undefined)[] = [];
  resolveImage(r: { ref: string; auth?: { password?: string } }): Promise<{ ref: string; digest: string }> {
    this.calls.push(`resolve ${r.ref}`);
    this.auths.push(r.auth?.password);
    if (this.registry instanceof Error) return Promise.reject(this.registry);
    const digest = this.registry.get(r.ref) ??
      [...this.registry.entries()].find(([k, v]) => r.ref === `${k.slice(0, k.lastIndexOf(":"))}@${v}`)?.[1];
    if (digest === undefined) {
      return Promise.reject(new CodedError("not_found", `manifest unknown: "${r.ref}"`));
    }
    return Promise.resolve({ ref: r.ref, digest });
  }
  pullImage(
    r: { ref: string; auth?: { password?: string } },
  ): ReturnType<NonNullable<DeployMachineApi["pullImage"]>> {
    this.calls.push(`pull ${r.ref}`);
    this.auths.push(r.auth?.password);
    const failure = this.failPull;
    if (failure !== undefined) {
      return Promise.resolve({
        state: "failed",
        layers: 1,
        "layers_done": 0,
        bytes: 5,
        "bytes_total": 10,
        "duration_ms": 1,
        error: { code: failure.code, message: failure.message },
      });
    }
    this.images.add(r.ref);
    return Promise.resolve({
      state: "done",
      layers: 1,
      "layers_done": 1,
      bytes: 10,
      "bytes_total": 10,
      "duration_ms": 1,
    });
  }
  pullImageFromPeer(
    r: { ref: string; "from_machine_id": string },
  ): Promise<{ transferred: boolean; bytes: number; "duration_ms": number }> {
    this.calls.push(`copy ${r.ref} from ${r.from_machine_id}`);
    this.images.add(r.ref);
    return Promise.resolve({ transferred: true, bytes: 10, "duration_ms": 1 });
  }
  setPointer(
    r: { project: string; service: string; deployment: string },
  ): ReturnType<NonNullable<DeployMachineApi["setPointer"]>> {
    this.calls.push(`point ${r.project}/${r.service}`);
    return Promise.resolve({ pointer: { ...r, version: 1 } });
  }
  requireCapability(capability: string): Promise<void> {
    if (!this.missing.has(capability)) return Promise.resolve();
    return Promise.reject(
      new CodedError(
        "unsupported",
        `Machine "${this.name}" does not serve "${capability}": upgrade its daemon`,
      ),
    );
  }
}

/** Every capability name, for `missing`. */
export const ALL_CAPABILITIES: readonly string[] = Object.values(CAPABILITIES);

/** The Cluster as a Deploy reaches it: `machines` with a route, `omitted` names without one. */
export function cluster(machines: FakeMachine[], omitted: string[] = []): DeployMachines & Disposable & {
  disposed: boolean;
} {
  const result = {
    handles: machines.map((m) => ({ id: m.id, name: m.name, api: m })),
    omissions: omitted.map((machineName) => ({ machineName, reason: "no route to it from this CLI" })),
    disposed: false,
    [Symbol.dispose](): void {
      result.disposed = true;
    },
  };
  return result;
}

/** Saved State and Deployment records in memory, newest Deployment first, as the Config Store keeps them. */
export class FakeBook implements DeployBook {
  states = new Map<string, SavedState>();
  records: Parameters<DeployBook["saveDeployment"]>[0][] = [];
  /** Every status each Deployment was saved with, in order. */
  history: string[] = [];

  saveState(state: SavedState): void {
    this.states.set(state.project, state);
  }
  savedState(project: string): SavedState | undefined {
    return this.states.get(project);
  }
  savedProjects(): string[] {
    return [...this.states.keys()].sort();
  }
  forgetState(project: string): void {
    this.states.delete(project);
  }
  saveDeployment(record: Parameters<DeployBook["saveDeployment"]>[0]): void {
    this.history.push(`${record.id.slice(0, 4)} ${record.status}`);
    this.records = [record, ...this.records.filter((r) => r.id !== record.id)];
  }
  deployments(project: string): ReturnType<DeployBook["deployments"]> {
    return this.records.filter((r) => r.project === project);
  }
}

/** A report that records what a Deploy showed, and answers confirmations with `answer`. */
export function recorder(answer = true): DeployReport & {
  log: string[];
  events: DeployEvent[];
  outcomes: Outcome[];
  previews: Plan[];
} {
  const log: string[] = [];
  const events: DeployEvent[] = [];
  const outcomes: Outcome[] = [];
  const previews: Plan[] = [];
  return {
    log,
    events,
    outcomes,
    previews,
    preview(plan): void {
      previews.push(plan);
      log.push(`preview ${plan.ops.length}`);
    },
    confirm(question): Promise<boolean> {
      log.push(`confirm ${question}`);
      return Promise.resolve(answer);
    },
    event(event): void {
      events.push(event);
      log.push(`event ${event.type}`);
    },
    outcome(outcome): void {
      outcomes.push(outcome);
      log.push(`outcome ${outcome.status}`);
    },
  };
}

/** A Project from Compose text. */
export function compose(text: string): NormalizedProject {
  return loadCompose({ path: "compose.yaml", env: {}, text }).project;
}
