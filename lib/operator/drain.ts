// Drain, a bounded command (docs/bets.md, bet 3): the Machine turns its own workload acceptance off, then each Project
// with a Saved State and containers there is deployed again, which re-places its replicated slots on Machines
// that accept them (start-first, health-gated) and removes them from the drained Machine. Global slots and the
// Provisioned Volume copies in its Pool stay and are listed (a Drain moves no data: `ployz volume move` does). It ends when the last Deploy ends, and reports each Project; nothing continues after it.
import type { MachineHandle, NormalizedProject } from "../deploy/mod.ts";
import type { MachineClient, MachineRecord, MachineResponse } from "../rpc/mod.ts";
import { INGRESS_PROJECT } from "../serving/mod.ts";
import { type DeployBook, deployProject, type DeployReport, type FlowResult } from "./deploy_flow.ts";
import type { DeployMachineApi, DeployMachines } from "./deploy_machines.ts";
import { ambiguousMachine, OperatorError } from "./errors.ts";
import { messageOf } from "../util/mod.ts";

/** A Machine a Drain reaches: a Deploy's API plus the route that changes the Machine's own flags. */
export type DrainApi = DeployMachineApi & {
  configureMachine(request: { "accepts_workloads"?: boolean }): Promise<MachineResponse>;
  /** `ployz.machine.pool.v1`: the Provisioned Volume copies in its Pool, which a Drain cannot move. */
  machinePool?: MachineClient["machinePool"];
};

/** A Provisioned Volume copy a Drain leaves on the drained Machine. */
export interface KeptVolume {
  /** The Volume's name in the Pool (`PROJECT_VOLUME`). */
  name: string;
  /** `writer` or `mirror`. */
  role: string;
  /** The Project whose Service made it, if the Machine says. */
  project?: string;
  /** Bytes the copy uses, if known. */
  usedBytes?: number;
}

/** What happened to one Project of a Drain. */
export interface DrainedProject {
  /** Project name. */
  project: string;
  /** How its Deploy ended: `succeeded`, `partial`/`failed` (an Outcome), `unchanged`, or `refused` before it ran. */
  status: string;
  /** Why, when it did not succeed. */
  detail?: string;
}

/** What a Drain did. */
export interface DrainResult {
  /** The drained Machine. */
  machine: { id: string; name: string };
  /** Each Project that had containers there, in name order. */
  projects: DrainedProject[];
  /** Global slots kept on the Machine (`project/service`). */
  kept: string[];
  /** Projects with containers there and no Saved State in this Config Store: left as they are. */
  unmanaged: string[];
  /** Provisioned Volume copies in the drained Machine's Pool: a Drain never moves data, so they stay. */
  volumes: KeptVolume[];
  /** Why the drained Machine's Pool could not be read, when it could not (its volumes are then unknown). */
  volumesUnknown?: string;
  /** Wall time of the whole Drain, in ms. */
  elapsedMs: number;
}

/** Whether `m` would take new workloads, as its status says. */
function accepting(m: MachineRecord): boolean {
  return m.phase === "participating" && m.accepts_workloads !== false;
}

/**
 * The one Machine `wanted` names (name, id or id prefix) among `handles`; a Machine the CLI cannot reach cannot
 * change its own flag, so it is refused.
 */
export function pickDrained<H extends { id: string; name: string }>(
  handles: readonly H[],
  omissions: readonly { machineName: string; reason: string }[],
  wanted: string,
): H {
  const found = handles.filter((h) =>
    h.name === wanted || h.id === wanted || (wanted.length >= 4 && h.id.startsWith(wanted))
  );
  if (found.length > 1) {
    throw ambiguousMachine(wanted, found.map((h) => h.id));
  }
  if (found.length === 0) {
    const omitted = omissions.find((o) => o.machineName === wanted);
    throw new OperatorError(
      omitted === undefined ? "not_found" : "unavailable",
      omitted === undefined
        ? `No Machine "${wanted}" in this Cluster`
        : `Cannot drain Machine "${wanted}": ${omitted.reason} (nothing was changed)`,
      { machine: wanted },
    );
  }
  return found[0];
}

/** Refuses to drain the last Machine that accepts workloads, unless forced: its slots would have nowhere to go. */
export function checkSomewhereToGo(
  drained: { name: string },
  others: readonly { name: string; record?: MachineRecord }[],
  force: boolean,
): void {
  if (force || others.some((o) => o.record !== undefined && accepting(o.record))) return;
  throw new OperatorError(
    "conflict",
    `Refusing to drain Machine "${drained.name}": no other Machine that answered accepts workloads, so its ` +
      `replicated slots would have nowhere to go (pass --force to drain it anyway; nothing was changed)`,
    { machine: drained.name },
  );
}

/** The receipt of one leg of a Drain: `sent` until its end is known, then how it ended. */
export interface DrainLegReceipt {
  /** `sent`, or the leg's status once it ended (`succeeded`, `unchanged`, `partial`, `failed`, `refused`). */
  status: string;
  /** Why, when it did not succeed. */
  detail?: string;
}

/** Where a Drain keeps its receipts, one per leg, under its request key (the Config Store in the CLI). */
export interface DrainReceipts {
  /** The receipt of a leg, if any. */
  load(leg: string): DrainLegReceipt | undefined;
  /** Saves a leg's receipt, replacing the previous one. */
  save(leg: string, receipt: DrainLegReceipt): void;
}

const DONE = new Set(["succeeded", "unchanged"]);

/** Options of {@link drainMachine}. */
export interface DrainOptions {
  /**
   * Receipts of this request's legs: a leg already done is not sent again; every other leg is, because each names
   * the state it wants (acceptance off; a Deploy re-planned from what the Machines report, whose creation keys
   * find earlier effects), so resending a `sent` leg whose outcome is unknown is safe.
   */
  receipts?: DrainReceipts;
  /** Drain even when no other Machine accepts workloads. */
  force: boolean;
  /** How each Project's Deploy is shown. */
  report(project: string): DeployReport;
  /** Monitor period of a Service that sets none (`--monitor`); the Deploy's default when absent. */
  monitorMs?: number;
  /** Called once the Machine refuses workloads, before the first Deploy. */
  drained?(machine: MachineRecord): void;
}

/** Drains the Machine `wanted`; see the module note. */
export async function drainMachine(
  machines: DeployMachines & { handles: (MachineHandle & { api: DrainApi })[] },
  book: DeployBook,
  wanted: string,
  options: DrainOptions,
): Promise<DrainResult> {
  const started = Date.now();
  const target = pickDrained(machines.handles, machines.omissions, wanted);
  const others = await Promise.all(
    machines.handles.filter((h) => h.id !== target.id).map(async (h) => {
      try {
        return { name: h.name, record: (await h.api.status()).machine as MachineRecord };
      } catch {
        return { name: h.name };
      }
    }),
  );
  checkSomewhereToGo(target, others, options.force);
  const receipts = options.receipts;
  receipts?.save("accept", { status: "sent" });
  const { machine } = await target.api.configureMachine({ "accepts_workloads": false });
  receipts?.save("accept", { status: "succeeded" });
  options.drained?.(machine);
  const listed = await target.api.listContainers({});
  const projects = [...new Set(listed.containers.map((c) => c.project))]
    .filter((p) => p !== INGRESS_PROJECT).sort();
  const result: DrainResult = {
    machine: { id: target.id, name: target.name },
    projects: [],
    kept: [],
    unmanaged: [],
    volumes: [],
    elapsedMs: 0,
  };
  // Read before the Deploys: a Service with a Provisioned Volume stays with it, and the report says so.
  if (target.api.machinePool !== undefined) {
    try {
      const pool = await target.api.machinePool({}, { signal: AbortSignal.timeout(15_000) });
      result.volumes = pool.volumes
        .filter((v) => v.role === "writer" || v.role === "mirror")
        .map((v) => ({
          name: v.name,
          role: v.role,
          ...(typeof v.project === "string" ? { project: v.project } : {}),
          ...(typeof v.used_bytes === "number" ? { usedBytes: v.used_bytes } : {}),
        }))
        .sort((a, b) => a.name.localeCompare(b.name));
    } catch (error) {
      result.volumesUnknown = messageOf(error);
    }
  }
  for (const name of projects) {
    const state = book.savedState(name);
    const saved = state?.compose as NormalizedProject | undefined;
    if (state === undefined || saved === undefined) {
      result.unmanaged.push(name);
      continue;
    }
    for (const c of listed.containers.filter((c) => c.project === name)) {
      if (saved.services[c.service]?.mode === "global") result.kept.push(`${name}/${c.service}`);
    }
    const leg = `deploy ${name}`;
    const prior = receipts?.load(leg);
    if (prior !== undefined && DONE.has(prior.status)) {
      result.projects.push({
        project: name,
        status: prior.status,
        detail: "done by an earlier run of this request",
      });
      continue;
    }
    receipts?.save(leg, { status: "sent" });
    let flow: FlowResult;
    try {
      flow = await deployProject(machines, book, {
        project: saved,
        warnings: [],
        sourcePath: state.sourcePath,
        ...(options.monitorMs === undefined ? {} : { monitorMs: options.monitorMs }),
      }, {
        report: options.report(name),
        yes: true,
        dryRun: false,
        confirmDataLoss: [],
        verb: "drain",
      });
    } catch (error) {
      const detail = messageOf(error);
      receipts?.save(leg, { status: "refused", detail });
      result.projects.push({ project: name, status: "refused", detail });
      continue;
    }
    if (flow.status === "ran") {
      const outcome = flow.outcome;
      result.projects.push({
        project: name,
        status: outcome.status,
        ...(outcome.status === "succeeded"
          ? {}
          : { detail: outcome.failed?.error.message ?? outcome.status }),
      });
    } else result.projects.push({ project: name, status: flow.status });
    const last = result.projects[result.projects.length - 1];
    receipts?.save(
      leg,
      last.detail === undefined ? { status: last.status } : { status: last.status, detail: last.detail },
    );
  }
  result.kept = [...new Set(result.kept)].sort();
  result.elapsedMs = Date.now() - started;
  return result;
}
