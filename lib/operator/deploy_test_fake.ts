// An in-memory Cluster for unit tests of the operator's Deploy flows: Machines answering the Deploy's slice of
// Machine RPC, a capability list per Machine, and Saved State and Deployment records in memory.
import type { ContainerSpec, DeployEvent, NormalizedProject, Outcome, Plan } from "../deploy/mod.ts";
import { loadCompose } from "../deploy/mod.ts";
import { FakeContainers, observedOf } from "../deploy/testing/mod.ts";
import { CAPABILITIES } from "../rpc/mod.ts";
import type { SavedState } from "../store/mod.ts";
import { CodedError } from "../util/mod.ts";
import type { DeployBook, DeployReport } from "./deploy_flow.ts";
import type { DeployMachineApi, DeployMachines } from "./deploy_machines.ts";

/** How a Machine would observe a container made from `spec` (the deploy area's fake, shared). */
export { observedOf };

/**
 * A fake Machine: the deploy area's containers and call log, with the slice of Machine RPC the operator asks besides
 * (capabilities, shipped files, registry pulls), a Machine that can be down, and no Pool (the drain skips it).
 */
export class FakeMachine extends FakeContainers implements DeployMachineApi {
  images = new Set<string>(["app:1"]);
  /** Capabilities this Machine's daemon does not serve. */
  missing = new Set<string>();
  /** Fails `status` (the Machine cannot be observed). */
  down: Error | undefined;

  status(): ReturnType<DeployMachineApi["status"]> {
    if (this.down !== undefined) return Promise.reject(this.down);
    return Promise.resolve({
      machine: { id: this.id, name: this.name, phase: "participating", "accepts_ingress": false },
      "observed_at": "t",
    });
  }
  ensureContainerWithFiles(
    r: { spec: ContainerSpec; start: boolean; files: Record<string, string> },
  ): ReturnType<DeployMachineApi["ensureContainer"]> {
    this.calls.push(`files ${Object.keys(r.files).join(",")}`);
    return this.ensureContainer(r);
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

/** Receipts by leg in memory, as a resumable flow's receipt book loads and saves them. */
export function receiptBook<R>(): {
  legs: Map<string, R>;
  load(leg: string): R | undefined;
  save(leg: string, receipt: R): void;
} {
  const legs = new Map<string, R>();
  return { legs, load: (leg) => legs.get(leg), save: (leg, receipt) => void legs.set(leg, receipt) };
}
