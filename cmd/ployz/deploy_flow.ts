// The client-side Deploy shared by deploy, scale and rm: Snapshot, Plan, Preview, confirm, execute, Outcome.
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { CliError, type Io } from "../../lib/cli/mod.ts";
import {
  canonicalJson,
  type ContainerSpec,
  type DeployEvent,
  deployIntent,
  executePlan,
  type FileContents,
  type MachineApi,
  newDeploymentId,
  type NormalizedProject,
  opView,
  type Outcome,
  outcomeJson,
  type Plan,
  planDeploy,
  progressPrinter,
  renderOutcome,
  renderPreview,
  type Snapshot,
  takeSnapshot,
  toWire,
} from "../../lib/deploy/mod.ts";
import { fillIngressSlot, INGRESS_PROJECT, INGRESS_SERVICE, ingressImage } from "../../lib/serving/mod.ts";
import type { MachineClient } from "../../lib/rpc/mod.ts";
import type { ConfigStore } from "../../lib/store/mod.ts";
import { planCapabilities, requireCapabilities, SNAPSHOT_CAPABILITIES } from "./capabilities.ts";
import { jsonLine } from "./connect.ts";
import { clientOf, type DeployMachines } from "./deploy_machines.ts";

/** How a Deploy is confirmed and shown. */
export interface FlowOptions {
  /** Where to write. */
  io: Io;
  /** NDJSON output. */
  json: boolean;
  /** Skip the ordinary confirmation. */
  yes: boolean;
  /** Show the Preview and stop. */
  dryRun: boolean;
  /** Data Loss names the operator confirmed. */
  confirmDataLoss: string[];
  /** What the command is doing, for prompts (`deploy`, `remove`). */
  verb: string;
  /** How many operations run at once (`--parallel`); default 1, strictly in plan order. */
  parallel?: number;
  /** Content of the files the Project ships (secrets, configs, relative binds), by digest; never saved. */
  files?: FileContents;
}

/**
 * `api` whose ensures carry the content of the files their spec ships, and only those: content travels with the
 * create request, to the Machine that runs the slot, and nowhere else.
 */
function shipping(api: MachineApi, files: FileContents | undefined): MachineApi {
  if (files === undefined || files.size === 0) return api;
  return new Proxy(api, {
    get(target, property): unknown {
      if (property === "ensureContainer") {
        return (request: { spec: ContainerSpec; start: boolean }) => {
          const sent: Record<string, string> = {};
          for (const file of request.spec.files ?? []) {
            const content = files.get(file.digest);
            if (content !== undefined) sent[file.digest] = Buffer.from(content).toString("base64");
          }
          if ((request.spec.files ?? []).length === 0) return target.ensureContainer(request);
          // Its own route: a daemon that predates it refuses by capability, never creates without the files.
          return (target as unknown as MachineClient).ensureContainerWithFiles({ ...request, files: sent });
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** The Ingress Proxy every Deploy fills on ingress Machines. */
const INGRESS = { project: INGRESS_PROJECT, service: INGRESS_SERVICE };

/** Every reachable Machine's observation of `project`; Machines not reached stay in it as failures or omissions. */
export async function observe(
  machines: DeployMachines,
  project: string,
  images: string[],
  options: { ingress?: boolean } = {},
): Promise<Snapshot> {
  return await takeSnapshot(machines.handles, {
    project,
    images,
    ingress: options.ingress === true ? INGRESS : undefined,
    omissions: machines.omissions,
    precheck: (m) => requireCapabilities(clientOf(machines, m.id)!, SNAPSHOT_CAPABILITIES),
  });
}

/** Refuses, before anything runs, a plan that asks a Machine for a capability it does not serve. */
export async function requirePlanCapabilities(plan: Plan, machines: DeployMachines): Promise<void> {
  for (const id of new Set(plan.ops.map((op) => op.machineId))) {
    const client = clientOf(machines, id);
    if (client !== undefined) await requireCapabilities(client, planCapabilities(plan, id));
  }
}

function intentDigest(project: NormalizedProject): string {
  return createHash("sha256").update(canonicalJson(project)).digest("hex");
}

/** Reuses the Deployment a killed run of the same intent left `running`, so its containers are found again. */
function deploymentFor(config: ConfigStore, project: NormalizedProject): { id: string; resumed: boolean } {
  const last = config.deployments(project.name)[0];
  const outcome = last?.outcome as { intent_digest?: string } | null | undefined;
  if (last?.status === "running" && outcome?.intent_digest === intentDigest(project)) {
    return { id: last.id, resumed: true };
  }
  return { id: newDeploymentId(), resumed: false };
}

function eventJson(event: DeployEvent): unknown {
  if (event.type === "plan") return toWire({ ...event, ops: event.ops.map(opView) });
  if (event.type === "outcome") return { type: "outcome", outcome: outcomeJson(event.outcome) };
  return toWire(event);
}

async function prompt(question: string): Promise<boolean> {
  await Deno.stdout.write(new TextEncoder().encode(`${question} [y/N] `));
  const buf = new Uint8Array(256);
  const n = await Deno.stdin.read(buf);
  const answer = n === null ? "" : new TextDecoder().decode(buf.subarray(0, n)).trim().toLowerCase();
  return answer === "y" || answer === "yes";
}

/** Shows the Preview; refuses unconfirmed Data Loss; asks unless `-y`. False when the operator declined. */
export async function confirmPlan(plan: Plan, options: FlowOptions): Promise<boolean> {
  const { io } = options;
  if (options.json) {
    io.out(jsonLine({ type: "preview", preview: toWire({ ...plan, ops: plan.ops.map(opView) }) }));
  } else io.out(renderPreview(plan));
  if (plan.ops.length === 0 || options.dryRun) return false;
  const missing = plan.dataLoss.map((d) => d.name).filter((n) => !options.confirmDataLoss.includes(n));
  if (missing.length > 0) {
    throw new CliError(
      "invalid_argument",
      `Refusing to ${options.verb}: it destroys ${
        missing.map((n) => `"${n}"`).join(", ")
      }; confirm with --confirm-data-loss ${plan.dataLoss.map((d) => d.name).join(",")}`,
      { details: { data_loss: plan.dataLoss.map((d) => d.name) } },
    );
  }
  if (options.yes) return true;
  if (!Deno.stdin.isTerminal()) {
    throw new CliError(
      "invalid_argument",
      `Refusing to ${options.verb} without confirmation: standard input is not a terminal; pass -y to confirm`,
    );
  }
  return await prompt(`Proceed with ${plan.ops.length} operation${plan.ops.length === 1 ? "" : "s"}?`);
}

/** Executes a confirmed plan with progress, records its Outcome, prints it; resolves with the exit code. */
export async function executeAndReport(
  plan: Plan,
  cluster: DeployMachines,
  config: ConfigStore,
  options: FlowOptions & { record: Record<string, unknown> },
): Promise<number> {
  await requirePlanCapabilities(plan, cluster);
  const { io } = options;
  const createdAt = new Date().toISOString();
  config.saveDeployment({
    id: plan.deploymentId,
    project: plan.project,
    createdAt,
    status: "running",
    outcome: {
      ...options.record,
      "deployment_id": plan.deploymentId,
      plan: plan.ops.map((op) => toWire(opView(op))),
    },
  });
  const machines = new Map<string, MachineApi>(
    cluster.handles.map((h) => [h.id, shipping(h.api, options.files)]),
  );
  const printer = progressPrinter(io.out, { tty: !options.json && Deno.stdout.isTerminal() });
  const image = ingressImage();
  const outcome: Outcome = await executePlan(plan, machines, {
    parallel: options.parallel,
    onEvent: (event) => options.json ? io.out(jsonLine(eventJson(event))) : printer.event(event),
    fillIngress: async (machine, request) =>
      fillIngressSlot(machine, {
        ...request,
        image,
        // The network the Machine's own record names (absent from older daemons: the default).
        network: (await machine.status()).machine.docker_network,
      }),
  });
  config.saveDeployment({
    id: plan.deploymentId,
    project: plan.project,
    createdAt,
    status: outcome.status,
    outcome: { ...options.record, ...outcomeJson(outcome) },
  });
  if (!options.json) io.out(renderOutcome(outcome));
  return outcome.status === "succeeded" ? 0 : 1;
}

/** A whole Deploy of `project` through `api`; saves the Saved State once admitted. */
export async function deployProject(
  machines: DeployMachines,
  config: ConfigStore,
  request: { project: NormalizedProject; warnings: string[]; sourcePath: string; monitorMs?: number },
  options: FlowOptions,
): Promise<number> {
  const { project } = request;
  const previous = config.savedState(project.name)?.compose as NormalizedProject | undefined;
  const deployment = deploymentFor(config, project);
  const ingress = { ...INGRESS, image: ingressImage() };
  const images = [...Object.values(project.services).map((s) => s.image), ingress.image];
  const snapshot = await observe(machines, project.name, images, { ingress: true });
  const intent = deployIntent(project, deployment.id, request.warnings);
  const plan = planDeploy({
    intent,
    snapshot,
    previous,
    monitorMs: request.monitorMs,
    serving: { ingress },
  });
  if (deployment.resumed) {
    plan.warnings.unshift(
      `Resuming Deployment ${deployment.id.slice(0, 8)}, which an earlier run left unfinished`,
    );
  }
  // Refuse before asking: the operator should not confirm a plan this Machine cannot run.
  if (!options.dryRun) await requirePlanCapabilities(plan, machines);
  const go = await confirmPlan(plan, options);
  if (plan.ops.length === 0 && !options.dryRun) {
    config.saveState({
      project: project.name,
      compose: project,
      sourcePath: request.sourcePath,
      savedAt: new Date().toISOString(),
    });
    if (options.json) {
      options.io.out(jsonLine({
        type: "outcome",
        outcome: outcomeJson({
          deploymentId: plan.deploymentId,
          project: plan.project,
          status: "succeeded",
          completed: [],
          notAttempted: [],
          compensation: [],
          retiring: [],
          observedAt: plan.observedAt,
        }),
      }));
    }
    return 0;
  }
  if (!go) {
    if (!options.dryRun) options.io.err("Nothing changed: the operator declined\n");
    return options.dryRun ? 0 : 1;
  }
  config.saveState({
    project: project.name,
    compose: project,
    sourcePath: request.sourcePath,
    savedAt: new Date().toISOString(),
  });
  return await executeAndReport(plan, machines, config, {
    ...options,
    record: { "intent_digest": intentDigest(project) },
  });
}
