/**
 * The Deploy Snapshot: each Machine's Live Observation of one Project, taken through the Entry Machine, with
 * per-Machine failures and omissions kept beside the successes (docs/bets.md, bet 4), never folded into a boolean.
 *
 * @module
 */

import { DeployError, errorBody } from "./errors.ts";
import { answerWithin } from "../../util/mod.ts";
import type { MachineHandle, ObservedContainerView } from "./machine_api.ts";
import type { ObservedVolumeCopy } from "./volume_locality.ts";

/** What one Machine answered. */
export interface MachineObservation {
  /** Machine id. */
  machineId: string;
  /** Machine Name. */
  machineName: string;
  /** Its phase (`participating` once initialized). */
  phase: string;
  /** When it observed, ISO 8601. */
  observedAt: string;
  /** The Project's containers on it. */
  containers: ObservedContainerView[];
  /** Presence of each image the Deploy needs, by reference. */
  images: Record<string, boolean>;
  /** False when its record refuses ingress; absent means it accepts ingress. */
  acceptsIngress?: boolean;
  /** False when its record refuses new workloads (a drained Machine); absent means it accepts them. */
  acceptsWorkloads?: boolean;
  /** Its Machine Labels, as its record says; absent from older daemons (no labels). */
  labels?: Record<string, string>;
  /** The Docker network its record names; absent from older daemons (the plan's default then). */
  network?: string;
  /** Its Ingress Proxy containers, when the Snapshot asked for them. */
  ingress?: ObservedContainerView[];
  /**
   * Its copies of the Volumes the Snapshot asked about (none held: an empty list); absent when it was not asked
   * or did not answer (then `volumesError` says why).
   */
  volumes?: ObservedVolumeCopy[];
  /** Why `volumes` is absent although asked. */
  volumesError?: string;
}

/** A Machine that did not answer, and why. */
export interface ObservationFailure {
  /** Machine id, when known. */
  machineId: string;
  /** Machine Name. */
  machineName: string;
  /** The error it answered with or the transport failure. */
  error: { code: string; message: string };
}

/** A Machine known to exist that this Snapshot did not ask, and why. */
export interface ObservationOmission {
  /** Machine Name. */
  machineName: string;
  /** Why it was left out. */
  reason: string;
}

/** The observer-relative view a plan is computed against. */
export interface Snapshot {
  /** Project observed. */
  project: string;
  /** When the Snapshot finished, ISO 8601. */
  observedAt: string;
  /** Machines that answered. */
  machines: MachineObservation[];
  /** Machines that failed to answer. */
  failures: ObservationFailure[];
  /** Machines not asked. */
  omissions: ObservationOmission[];
}

/** What {@linkcode takeSnapshot} observes. */
export interface SnapshotRequest {
  /** The Project whose containers are listed. */
  project: string;
  /**
   * Images whose presence is checked on each Machine. A promise lets the rest of the observation start while the
   * caller still resolves them (digest pinning); a rejected one makes every Machine a failure.
   */
  images: string[] | Promise<string[]>;
  /** Images whose presence is asked at once, beside the rest of the observation, whatever `images` waits for. */
  imagesAtOnce?: string[];
  /** The Ingress Proxy's Project and Service, to list its containers too. */
  ingress?: { project: string; service: string };
  /** Provisioned Volumes (Docker names) whose copy each Machine reports, for Volume locality. */
  volumes?: string[];
  /** Machines known to exist and not asked, with the reason; kept in the Snapshot as omissions. */
  omissions?: ObservationOmission[];
  /**
   * Runs on each Machine beside its questions, which are all reads (e.g. a capability check); a throw makes the
   * Machine a failure with this error, whatever the questions answered.
   */
  precheck?: (machine: MachineHandle) => Promise<void>;
  /**
   * How long one question may go unanswered before its Machine is a failure; default
   * {@linkcode SNAPSHOT_ANSWER_MS}. A Machine cut off after it took a request answers nothing and closes nothing.
   */
  answerWithinMs?: number;
}

/** How long a Snapshot waits for one answer from a Machine when the caller does not say. */
export const SNAPSHOT_ANSWER_MS = 60_000;

/** `answer`, or an `unavailable` failure naming `machine` once `ms` passed without it. */
function within<T>(answer: Promise<T>, ms: number, machine: string): Promise<T> {
  return answerWithin(
    answer,
    ms,
    () =>
      new DeployError(
        "unavailable",
        `Machine "${machine}" took the request and sent no answer within ${ms} ms`,
        {
          machine,
        },
      ),
  );
}

/** The Machine's own report of its copies of `volumes`; a daemon without Pools holds none. */
async function volumeCopies(
  m: MachineHandle,
  volumes: string[],
): Promise<Pick<MachineObservation, "volumes" | "volumesError">> {
  if (m.api.machinePool === undefined) return { volumesError: "this client cannot ask it" };
  try {
    const shown = await m.api.machinePool({});
    return {
      volumes: shown.volumes.filter((v) => volumes.includes(v.name)).map((v) => ({
        name: v.name,
        role: v.role,
        ...(v.snapshot === undefined ? {} : { snapshot: v.snapshot }),
        ...(v.epoch === undefined ? {} : { epoch: v.epoch }),
      })),
    };
  } catch (error) {
    const { code, message } = errorBody(error);
    // A daemon that predates Pools cannot hold a Provisioned Volume.
    if (code === "unsupported") return { volumes: [] };
    return { volumesError: `${code}: ${message}` };
  }
}

/** `api` whose every call fails as `unavailable` once `ms` passed without an answer. */
function boundedReads(api: MachineHandle["api"], ms: number, machine: string): MachineHandle["api"] {
  return new Proxy(api, {
    get(target, key, receiver): unknown {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]): unknown => {
        const answer = value.apply(target, args);
        return answer instanceof Promise ? within(answer, ms, machine) : answer;
      };
    },
  });
}

/**
 * Observes `project` and the presence of `images` on every Machine, each independently. A Machine's questions go
 * out together (one round trip, not one per question): none depends on another's answer.
 */
export async function takeSnapshot(machines: MachineHandle[], request: SnapshotRequest): Promise<Snapshot> {
  const ingress = request.ingress;
  const wanted = Promise.resolve(request.images);
  // Each Machine awaits it; when every Machine failed first, nothing does, and the caller owns the rejection.
  wanted.catch(() => {});
  const answerMs = request.answerWithinMs ?? SNAPSHOT_ANSWER_MS;
  const settled = await Promise.allSettled(machines.map(async (m): Promise<MachineObservation> => {
    // Each question is bounded on its own: the wait for `images` (the caller's digest pinning) is not the Machine's.
    const asked: MachineHandle = { ...m, api: boundedReads(m.api, answerMs, m.name) };
    // The check and the reads go out together: one round trip to a Machine behind the Entry Machine, not two.
    const [checked, observed] = await Promise.allSettled([
      request.precheck === undefined ? undefined : within(request.precheck(m), answerMs, m.name),
      observe(asked),
    ]);
    if (checked.status === "rejected") throw checked.reason;
    if (observed.status === "rejected") throw observed.reason;
    return observed.value;
  }));
  async function observe(m: MachineHandle): Promise<MachineObservation> {
    const ask = (refs: string[]): Promise<[string, boolean][]> =>
      Promise.all(refs.map(async (ref) => [ref, (await m.api.inspectImage({ ref })).present]));
    const presence = async (): Promise<Record<string, boolean>> => {
      const atOnce = new Set(request.imagesAtOnce ?? []);
      const answers = await Promise.all([
        ask([...atOnce]),
        wanted.then((refs) => ask([...new Set(refs)].filter((ref) => !atOnce.has(ref)))),
      ]);
      return Object.fromEntries(answers.flat());
    };
    const volumes = request.volumes ?? [];
    const [status, list, images, proxies, copies] = await Promise.all([
      m.api.status(),
      m.api.listContainers({ project: request.project }),
      presence(),
      ingress === undefined ? undefined : m.api.listContainers(ingress),
      volumes.length === 0 ? undefined : volumeCopies(m, volumes),
    ]);
    const observation: MachineObservation = {
      machineId: status.machine.id,
      machineName: status.machine.name,
      phase: status.machine.phase,
      observedAt: list.observed_at,
      containers: list.containers.filter((c) => c.project === request.project),
      images,
      acceptsIngress: status.machine.accepts_ingress !== false,
      acceptsWorkloads: status.machine.accepts_workloads !== false,
      labels: { ...status.machine.labels ?? {} },
    };
    if (typeof status.machine.docker_network === "string") {
      observation.network = status.machine.docker_network;
    }
    if (ingress !== undefined && proxies !== undefined) {
      observation.ingress = proxies.containers.filter((c) =>
        c.project === ingress.project && c.service === ingress.service
      );
    }
    if (copies !== undefined) Object.assign(observation, copies);
    return observation;
  }
  const snapshot: Snapshot = {
    project: request.project,
    observedAt: new Date().toISOString(),
    machines: [],
    failures: [],
    omissions: [...request.omissions ?? []],
  };
  settled.forEach((result, i) => {
    if (result.status === "fulfilled") snapshot.machines.push(result.value);
    else {
      const { code, message } = errorBody(result.reason);
      snapshot.failures.push({
        machineId: machines[i].id,
        machineName: machines[i].name,
        error: { code, message },
      });
    }
  });
  return snapshot;
}
