// `ployz rm`'s flow: a Preview of what the reachable Machines hold, confirmation, then a removal mark written
// through the Entry Machine (a replicated, name-keyed row; lib/serving/removal.ts says why it lives there), the
// Saved State removed with it, and a bounded wait while each Machine removes its own covered containers after they
// left every proxy. Machines not reached leave the removal pending, with the reason, until they are next reachable.
import {
  type ContainerRef,
  newDeploymentId,
  type NormalizedProject,
  type Plan,
  planRemoval,
} from "../deploy/mod.ts";
import type { ListRemovalsResponse, MarkRemovalRequest, MarkRemovalResponse } from "../rpc/mod.ts";
import { removalKey } from "../serving/mod.ts";
import type { ConfigStore } from "../store/mod.ts";
import { sleep } from "../util/mod.ts";
import type { DeployReport } from "./deploy_flow.ts";
import { observe } from "./deploy_flow.ts";
import type { DeployMachines } from "./deploy_machines.ts";
import { OperatorError } from "./errors.ts";

/** The records a removal reads and writes on the operator's side. */
export type RemovalBook = Pick<
  ConfigStore,
  "savedState" | "saveState" | "forgetState" | "deployments" | "saveDeployment"
>;

/** The removal routes of the Entry Machine. */
export interface RemovalApi {
  /** `ployz.removal.mark.v1`. */
  markRemoval(request: MarkRemovalRequest): Promise<MarkRemovalResponse>;
  /** `ployz.removal.list.v1`. */
  listRemovals(request: { project?: string }): Promise<ListRemovalsResponse>;
}

/** How a removal is confirmed, run and shown. */
export interface RemovalOptions {
  /** The Preview and the question (only `preview` and `confirm` are used). */
  report: Pick<DeployReport, "preview" | "confirm">;
  /** One line per container removed while waiting. */
  progress(line: string): void;
  /** Skip the confirmation. */
  yes: boolean;
  /** Remove the named volumes too (Data Loss: each must be named in `confirmDataLoss`). */
  volumes?: boolean;
  /** The volume names the operator confirmed as Data Loss. */
  confirmDataLoss?: string[];
  /** How long to wait for the reachable Machines to finish, in ms; default 60 s. */
  patienceMs?: number;
  /** How often the reachable Machines are asked; default 250 ms. */
  pollMs?: number;
  /**
   * Receipts of this request's legs (`mark`, then `wait`). A re-run whose mark is known written neither asks nor
   * marks again: it waits for the Machines once more and reports. A mark `sent` with no known end is resent with
   * the same removal id, which is safe: the mark is name-keyed and names the state it wants.
   */
  receipts?: {
    load(leg: string): RemovalReceipt | undefined;
    save(leg: string, receipt: RemovalReceipt): void;
  };
}

/** The receipt of one leg of a removal. */
export interface RemovalReceipt {
  /** `mark`: `sent`, then `marked`; `wait`: `done` or `pending`. */
  status: string;
  /** `project/service` or `project/*`. */
  removal: string;
  /** The removal's id. */
  removalId: string;
  /** What happened to the Saved State (on `marked`). */
  savedState?: RemovalOutcome["savedState"];
  /** Volumes kept (on `marked`). */
  volumesKept?: string[];
  /** Volumes each Machine removes (on `marked`). */
  volumesRemoved?: string[];
  /** Machines still to finish, with the reason (on `wait`). */
  pending?: { machine: string; reason: string }[];
}

/** A Machine where the removal is not finished, and why. */
export interface PendingMachine {
  /** Its name. */
  machineName: string;
  /** Why it is pending. */
  reason: string;
  /** Covered containers it was last seen holding (empty when it could not be observed). */
  containers: ContainerRef[];
}

/** What a removal did: `done` on every Machine observed and none left out, else `pending`. */
export interface RemovalOutcome {
  /** The removal's id (its Deployment record). */
  removalId: string;
  /** `project/service`, or `project/*`. */
  removal: string;
  /** `done` or `pending`. */
  status: "done" | "pending";
  /** Containers seen removed, by Machine. */
  removed: { machineName: string; container: ContainerRef }[];
  /** Machines still to finish, each with its reason. */
  pending: PendingMachine[];
  /** What happened to the Saved State. */
  savedState: "removed" | "service_removed" | "none";
  /** Named volumes left in place. */
  volumesKept: string[];
  /** Named volumes each Machine removes once its covered containers are gone (confirmed Data Loss). */
  volumesRemoved: string[];
  /** When the outcome was reached, ISO 8601. */
  observedAt: string;
}

/** How a removal ended. */
export type RemovalResult = { status: "declined"; plan: Plan } | {
  status: "ran";
  plan: Plan;
  outcome: RemovalOutcome;
};

function entryOf(machines: DeployMachines): RemovalApi {
  const entry = machines.handles[0]?.api as Partial<RemovalApi> | undefined;
  if (entry?.markRemoval === undefined || entry.listRemovals === undefined) {
    throw new OperatorError(
      "unsupported",
      "The Entry Machine cannot record a removal mark: upgrade its daemon",
      {
        capability: "ployz.removal.mark.v1",
      },
    );
  }
  return entry as RemovalApi;
}

function volumesOf(saved: NormalizedProject | undefined, service: string | undefined): string[] {
  if (saved === undefined) return [];
  const out = new Set<string>();
  for (const [name, s] of Object.entries(saved.services)) {
    if (service !== undefined && name !== service) continue;
    for (const m of s.mounts) {
      if (m.type === "volume" && m.source !== "") out.add(saved.volumes[m.source]?.dockerName ?? m.source);
    }
  }
  return [...out].sort();
}

/**
 * Removes `project` (or one Service): refuses one that does not exist (no Saved State, no container on any Machine
 * that answered, no earlier Deployment), shows the Preview, asks, marks, removes the Saved State, and waits with
 * bounded patience for the reachable Machines. Never throws for a Machine that is not reached: it is pending.
 */
export async function removeWithMark(
  machines: DeployMachines,
  book: RemovalBook,
  request: { project: string; service?: string },
  options: RemovalOptions,
): Promise<RemovalResult> {
  const { project, service } = request;
  const entry = entryOf(machines);
  const key = removalKey(project, service);
  const prior = options.receipts?.load("mark");
  if (prior !== undefined && prior.removal !== key) {
    throw new OperatorError(
      "invalid_argument",
      `This request key was used to remove "${prior.removal}", not "${key}": give another key, or none`,
      { removal: prior.removal },
    );
  }
  // The mark of this request is known written: nothing is asked or marked again.
  const resumed = prior?.status === "marked";
  const saved = book.savedState(project)?.compose as NormalizedProject | undefined;
  const snapshot = await observe(machines, project, []);
  const plan = planRemoval({
    project,
    service,
    machines: snapshot.machines,
    saved,
    deploymentId: prior?.removalId ?? newDeploymentId(),
    observedAt: snapshot.observedAt,
  });
  if (resumed) {
    return await finish(machines, book, plan, snapshot, options, {
      key,
      project,
      service,
      createdAt: new Date().toISOString(),
      savedState: prior.savedState ?? "none",
      volumesKept: prior.volumesKept ?? [],
      volumesRemoved: prior.volumesRemoved ?? [],
    });
  }
  const known = saved !== undefined && (service === undefined || saved.services[service] !== undefined);
  if (!known && plan.ops.length === 0) {
    const what = service === undefined ? `Project "${project}"` : `Service "${project}/${service}"`;
    throw new OperatorError(
      "not_found",
      `${what} does not exist: no Saved State, and none of the ${snapshot.machines.length} Machine${
        snapshot.machines.length === 1 ? "" : "s"
      } that answered runs a container of it`,
      { project, ...(service === undefined ? {} : { service }) },
    );
  }
  const volumes = volumesOf(saved, service);
  const volumesKept = options.volumes === true ? [] : volumes;
  const volumesRemoved = options.volumes === true ? volumes : [];
  if (volumesKept.length > 0) {
    plan.warnings.push(
      `Volumes are kept: ${
        volumesKept.map((v) => `"${v}"`).join(", ")
      } (--volumes removes them, as Data Loss)`,
    );
  }
  plan.dataLoss = volumesRemoved.map((v) => ({
    name: v,
    reason: `volume "${v}" is deleted on every Machine that holds it, once its containers there are removed`,
  }));
  const unreached = unreachedOf(snapshot);
  for (const u of unreached) {
    plan.warnings.push(
      `Machine "${u.machineName}" was not observed (${u.reason}): it removes its containers when next reachable`,
    );
  }
  options.report.preview(plan);
  const unconfirmed = volumesRemoved.filter((v) => !(options.confirmDataLoss ?? []).includes(v));
  if (unconfirmed.length > 0) {
    throw new OperatorError(
      "invalid_argument",
      `Refusing to remove volumes without confirmation: it destroys ${
        unconfirmed.map((v) => `"${v}"`).join(", ")
      }; confirm with --confirm-data-loss ${volumesRemoved.join(",")}`,
      { "data_loss": volumesRemoved },
    );
  }
  if (!options.yes) {
    const n = plan.ops.length;
    const question = `Remove ${service === undefined ? "Project" : "Service"} "${
      removalKey(project, service).replace(/\/\*$/, "")
    }" (${n} container${n === 1 ? "" : "s"} observed) and its Saved State?`;
    if (!await options.report.confirm(question, plan)) return { status: "declined", plan };
  }

  const deployments = new Set<string>();
  for (const m of snapshot.machines) {
    for (const c of m.containers) {
      if (
        c.project === project && (service === undefined || c.service === service) &&
        c.deployment !== undefined
      ) {
        deployments.add(c.deployment);
      }
    }
  }
  for (const d of book.deployments(project)) deployments.add(d.id);
  const createdAt = new Date().toISOString();
  book.saveDeployment({
    id: plan.deploymentId,
    project,
    createdAt,
    status: "running",
    outcome: { removal: service ?? "*" },
  });
  options.receipts?.save("mark", { status: "sent", removal: key, removalId: plan.deploymentId });
  await entry.markRemoval({
    project,
    ...(service === undefined ? {} : { service }),
    id: plan.deploymentId,
    deployments: [...deployments].slice(-1024),
    state: "active",
    "ack_from": snapshot.machines.map((m) => m.machineId),
    ...(volumesRemoved.length === 0 ? {} : { volumes: volumesRemoved }),
  });
  // The Saved State goes with the mark: nothing re-plans a removed Project or Service from it.
  let savedState: RemovalOutcome["savedState"] = "none";
  if (saved !== undefined && service === undefined) {
    book.forgetState(project);
    savedState = "removed";
  } else if (saved !== undefined && saved.services[service!] !== undefined) {
    const { [service!]: _gone, ...services } = saved.services;
    const state = book.savedState(project)!;
    book.saveState({ ...state, compose: { ...saved, services }, savedAt: createdAt });
    savedState = "service_removed";
  }

  options.receipts?.save("mark", {
    status: "marked",
    removal: key,
    removalId: plan.deploymentId,
    savedState,
    volumesKept,
    volumesRemoved,
  });
  return await finish(machines, book, plan, snapshot, options, {
    key,
    project,
    service,
    createdAt,
    savedState,
    volumesKept,
    volumesRemoved,
  });
}

/** The Machines a removal's snapshot did not observe, each with the reason. */
function unreachedOf(
  snapshot: Awaited<ReturnType<typeof observe>>,
): { machineName: string; reason: string }[] {
  return [
    ...snapshot.failures.map((f) => ({
      machineName: f.machineName,
      reason: `${f.error.code}: ${f.error.message}`,
    })),
    ...snapshot.omissions.map((o) => ({ machineName: o.machineName, reason: o.reason })),
  ];
}

/** Waits for the reachable Machines, then records and returns the Outcome (and the `wait` receipt). */
async function finish(
  machines: DeployMachines,
  book: RemovalBook,
  plan: Plan,
  snapshot: Awaited<ReturnType<typeof observe>>,
  options: RemovalOptions,
  marked: {
    key: string;
    project: string;
    service: string | undefined;
    createdAt: string;
    savedState: RemovalOutcome["savedState"];
    volumesKept: string[];
    volumesRemoved: string[];
  },
): Promise<RemovalResult> {
  const { key, project, service, createdAt, savedState, volumesKept, volumesRemoved } = marked;
  const unreached = unreachedOf(snapshot);
  const outcome = await waitForMachines(machines, plan, options);
  outcome.pending.push(...unreached.map((u) => ({ ...u, containers: [] })));
  outcome.pending.sort((a, b) => a.machineName < b.machineName ? -1 : 1);
  const result: RemovalOutcome = {
    removalId: plan.deploymentId,
    removal: key,
    status: outcome.pending.length === 0 ? "done" : "pending",
    removed: outcome.removed,
    pending: outcome.pending,
    savedState,
    volumesKept,
    volumesRemoved,
    observedAt: new Date().toISOString(),
  };
  book.saveDeployment({
    id: plan.deploymentId,
    project,
    createdAt,
    status: result.status === "done" ? "succeeded" : "partial",
    outcome: {
      removal: service ?? "*",
      status: result.status,
      removed: result.removed.length,
      pending: result.pending.map((p) => ({ machine: p.machineName, reason: p.reason })),
    },
  });
  options.receipts?.save("wait", {
    status: result.status,
    removal: key,
    removalId: plan.deploymentId,
    pending: result.pending.map((p) => ({ machine: p.machineName, reason: p.reason.slice(0, 300) })),
  });
  return { status: "ran", plan, outcome: result };
}

/** Polls each observed Machine until its covered containers are gone or patience runs out. */
async function waitForMachines(
  machines: DeployMachines,
  plan: Plan,
  options: RemovalOptions,
): Promise<Pick<RemovalOutcome, "removed" | "pending">> {
  const started = Date.now();
  const patience = options.patienceMs ?? 60_000;
  const byMachine = new Map<string, { name: string; left: Map<string, ContainerRef> }>();
  for (const op of plan.ops) {
    if (op.kind !== "remove") continue;
    const entry = byMachine.get(op.machineId) ?? { name: op.machineName, left: new Map() };
    entry.left.set(op.container.id, op.container);
    byMachine.set(op.machineId, entry);
  }
  const removed: RemovalOutcome["removed"] = [];
  const errors = new Map<string, string>();
  for (;;) {
    await Promise.all([...byMachine].map(async ([id, entry]) => {
      if (entry.left.size === 0) return;
      const api = machines.handles.find((h) => h.id === id)?.api;
      if (api === undefined) return;
      try {
        const listed = await api.listContainers({ project: plan.project });
        const present = new Set(listed.containers.map((c) => c.id));
        errors.delete(id);
        for (const [cid, ref] of [...entry.left]) {
          if (present.has(cid)) continue;
          entry.left.delete(cid);
          removed.push({ machineName: entry.name, container: ref });
          options.progress(
            `removed ${ref.name} on "${entry.name}" (${((Date.now() - started) / 1000).toFixed(1)} s)`,
          );
        }
      } catch (error) {
        errors.set(id, (error as Error).message);
      }
    }));
    const left = [...byMachine.values()].some((e) => e.left.size > 0);
    if (!left || Date.now() - started >= patience) break;
    await sleep(options.pollMs ?? 250);
  }
  const pending: PendingMachine[] = [];
  for (const [id, entry] of byMachine) {
    if (entry.left.size === 0) continue;
    const error = errors.get(id);
    pending.push({
      machineName: entry.name,
      reason: error !== undefined
        ? `not answering (${error})`
        : `still holds ${entry.left.size} container${entry.left.size === 1 ? "" : "s"} after ${
          Math.round(patience / 1000)
        } s: they are waiting to leave every proxy (acks), or its removal failed (see its log)`,
      containers: [...entry.left.values()],
    });
  }
  return { removed, pending };
}

/** `ployz rm --cancel`: cancels an active mark; containers already removed stay removed. */
export async function cancelRemoval(
  machines: DeployMachines,
  request: { project: string; service?: string },
): Promise<MarkRemovalResponse> {
  const entry = entryOf(machines);
  const listed = await entry.listRemovals({ project: request.project });
  const key = removalKey(request.project, request.service);
  const mark = listed.removals.find((r) => removalKey(r.removal.project, r.removal.service) === key);
  if (mark === undefined || mark.removal.state !== "active") {
    throw new OperatorError("not_found", `No active removal of "${key}" to cancel`, { removal: key });
  }
  return await entry.markRemoval({
    project: request.project,
    ...(request.service === undefined ? {} : { service: request.service }),
    id: mark.removal.id,
    deployments: [],
    state: "cancelled",
  });
}

/** `ployz rm --status`: the marks as the Entry Machine's copy shows them. */
export async function removalStatus(
  machines: DeployMachines,
  request: { project?: string },
): Promise<ListRemovalsResponse> {
  return await entryOf(machines).listRemovals(request);
}
