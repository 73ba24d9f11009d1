// The client-side Deploy shared by deploy, scale, rm and the Global catch-up: Snapshot, Plan, Preview, confirm,
// execute, Outcome, and the Saved State and Deployment records that go with them. Printing and asking are the
// caller's, through a DeployReport.
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import {
  canonicalJson,
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
  projectProvisionedVolumes,
  type Snapshot,
  startPulls,
  takeSnapshot,
  toWire,
} from "../deploy/mod.ts";
import {
  fillIngressSlot,
  INGRESS_PROJECT,
  INGRESS_SERVICE,
  ingressImage,
  waitIngressServes,
} from "../serving/mod.ts";

/** How long a filled Ingress Proxy may take to serve the routes it was filled for. */
const INGRESS_SERVES_MS = 30_000;
import type { ConfigStore } from "../store/mod.ts";
import { planCapabilities, requireCapabilities, SNAPSHOT_CAPABILITIES } from "./capabilities.ts";
import { clientOf, type DeployMachineApi, type DeployMachines } from "./deploy_machines.ts";
import { OperatorError } from "./errors.ts";
import { traceMark } from "../util/mod.ts";
import { type AuthLookup, pinImages } from "./image_pins.ts";
import {
  type Builder,
  type BuildEvent,
  type BuildJob,
  discardBuilds,
  pickBuilder,
  prepareBuilds,
  runBuilds,
} from "./build_flow.ts";

/** The records a Deploy reads and writes on the operator's side: Saved State and Deployment records. */
export type DeployBook = Pick<
  ConfigStore,
  "savedState" | "saveState" | "savedProjects" | "deployments" | "saveDeployment"
>;

/** How the caller shows a Deploy and asks the operator. */
export interface DeployReport {
  /** Each build event: what will be built or is up to date (before the Preview), then sending and output. */
  build?(event: BuildEvent): void;
  /** The Preview of the plan, before anything runs (the only output of a dry run). */
  preview(plan: Plan): void;
  /** Asks whether to run `plan`; called only when it has operations and `yes` is not set. False declines. */
  confirm(question: string, plan: Plan): Promise<boolean>;
  /** Each progress event while the plan runs, the `outcome` event last; also the Outcome of an empty plan. */
  event(event: DeployEvent): void;
  /** The Outcome once recorded. */
  outcome(outcome: Outcome): void;
}

/** How a Deploy is confirmed and run. */
export interface FlowOptions {
  /** Where the Preview, progress and Outcome go, and how the operator is asked. */
  report: DeployReport;
  /** Skip the ordinary confirmation. */
  yes: boolean;
  /** Show the Preview and stop. */
  dryRun: boolean;
  /** Data Loss names the operator confirmed. */
  confirmDataLoss: string[];
  /** What the command is doing, for refusals (`deploy`, `remove`). */
  verb: string;
  /** How many operations run at once (`--parallel`); default `DEFAULT_PARALLEL` (12), 1 strictly in order. */
  parallel?: number;
  /** How long to wait, beyond an operation's own wait, for a Machine that took a request; default 2 min. */
  callTimeoutMs?: number;
  /** Content of the files the Project ships (secrets, configs, relative binds), by digest; never saved. */
  files?: FileContents;
  /** Registry credentials by host, from the operator's side; sent only with the requests that need them. */
  registryAuth?: AuthLookup;
  /** The Machine that builds `build:` Services (`--builder`); default the Entry Machine. */
  builder?: string;
  /** Build every `build:` Service again without Docker's layer cache (`--no-cache`). */
  noCache?: boolean;
}

/**
 * How a Deploy ended: `previewed` (dry run), `unchanged` (nothing to do), `declined` (the operator said no), or
 * `ran` with its Outcome.
 */
export type FlowResult =
  | { status: "previewed" | "unchanged" | "declined"; plan: Plan }
  | { status: "ran"; plan: Plan; outcome: Outcome };

/**
 * `api` whose ensures carry the content of the files their spec ships, and only those: content travels with the
 * create request, to the Machine that runs the slot, and nowhere else.
 */
function shipping(api: DeployMachineApi, files: FileContents | undefined): MachineApi {
  if (files === undefined || files.size === 0) return api;
  return new Proxy(api, {
    get(target, property): unknown {
      if (property === "ensureContainer") {
        return (request: Parameters<MachineApi["ensureContainer"]>[0]) => {
          const sent: Record<string, string> = {};
          for (const file of request.spec.files ?? []) {
            const content = files.get(file.digest);
            if (content !== undefined) sent[file.digest] = Buffer.from(content).toString("base64");
          }
          if ((request.spec.files ?? []).length === 0) return target.ensureContainer(request);
          // Its own route: a daemon that predates it refuses by capability, never creates without the files.
          return target.ensureContainerWithFiles({ ...request, files: sent });
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
  images: string[] | Promise<string[]>,
  options: { ingress?: boolean; volumes?: string[]; imagesAtOnce?: string[]; answerWithinMs?: number } = {},
): Promise<Snapshot> {
  return await takeSnapshot(machines.handles, {
    project,
    images,
    imagesAtOnce: options.imagesAtOnce,
    ingress: options.ingress === true ? INGRESS : undefined,
    volumes: options.volumes,
    answerWithinMs: options.answerWithinMs,
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
function deploymentFor(book: DeployBook, project: NormalizedProject): { id: string; resumed: boolean } {
  const last = book.deployments(project.name)[0];
  const outcome = last?.outcome as { intent_digest?: string } | null | undefined;
  if (last?.status === "running" && outcome?.intent_digest === intentDigest(project)) {
    return { id: last.id, resumed: true };
  }
  return { id: newDeploymentId(), resumed: false };
}

/** Shows the Preview; refuses unconfirmed Data Loss; asks unless `yes`. False when there is nothing to run. */
export async function confirmPlan(plan: Plan, options: FlowOptions): Promise<boolean> {
  options.report.preview(plan);
  if (plan.ops.length === 0 || options.dryRun) return false;
  const missing = plan.dataLoss.map((d) => d.name).filter((n) => !options.confirmDataLoss.includes(n));
  if (missing.length > 0) {
    throw new OperatorError(
      "invalid_argument",
      `Refusing to ${options.verb}: it destroys ${
        missing.map((n) => `"${n}"`).join(", ")
      }; confirm with --confirm-data-loss ${plan.dataLoss.map((d) => d.name).join(",")}`,
      { data_loss: plan.dataLoss.map((d) => d.name) },
    );
  }
  if (options.yes) return true;
  return await options.report.confirm(
    `Proceed with ${plan.ops.length} operation${plan.ops.length === 1 ? "" : "s"}?`,
    plan,
  );
}

/** Executes a confirmed plan with progress, records its Outcome as a Deployment record, and reports it. */
export async function executeAndRecord(
  plan: Plan,
  machines: DeployMachines,
  book: DeployBook,
  options: Pick<FlowOptions, "report" | "parallel" | "callTimeoutMs" | "files" | "registryAuth"> & {
    record: Record<string, unknown>;
    /** The pull tasks already started for this plan ({@linkcode startPulls}). */
    pullsStarted?: Promise<void>;
    /** `project/service` of the Services with ingress routes: a fill waits until its proxy routes them. */
    routed?: string[];
  },
): Promise<Outcome> {
  await requirePlanCapabilities(plan, machines);
  const createdAt = new Date().toISOString();
  book.saveDeployment({
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
  const apis = new Map<string, MachineApi>(
    machines.handles.map((h) => [h.id, shipping(h.api, options.files)]),
  );
  const image = ingressImage();
  const outcome: Outcome = await executePlan(plan, apis, {
    parallel: options.parallel,
    callTimeoutMs: options.callTimeoutMs,
    onEvent: (event) => options.report.event(event),
    registryAuth: options.registryAuth,
    pullsStarted: options.pullsStarted,
    fillIngress: async (machine, request) => {
      const filled = await fillIngressSlot(machine, {
        ...request,
        image,
        // The network the Machine's own record names (absent from older daemons: the default).
        network: (await machine.status()).machine.docker_network,
      });
      // Done only once this proxy serves the routes it was filled for, so traffic sent the moment the Deploy
      // returns finds them.
      const name = machines.handles.find((h) => h.id === request.machineId)?.name ?? request.machineId;
      await waitIngressServes(machine, {
        proxyId: filled.containerId,
        routed: options.routed ?? [],
        patienceMs: INGRESS_SERVES_MS,
        machineName: name,
      });
      return filled;
    },
  });
  book.saveDeployment({
    id: plan.deploymentId,
    project: plan.project,
    createdAt,
    status: outcome.status,
    outcome: { ...options.record, ...outcomeJson(outcome) },
  });
  traceMark("deploy: executed");
  options.report.outcome(outcome);
  return outcome;
}

/** A whole Deploy of `project`; saves its Saved State once admitted (confirmed, or nothing to do). */
export async function deployProject(
  machines: DeployMachines,
  book: DeployBook,
  request: { project: NormalizedProject; warnings: string[]; sourcePath: string; monitorMs?: number },
  options: FlowOptions,
): Promise<FlowResult> {
  // A Service read from a Compose file runs `<project>-<service>` until its build tags it; one from Saved State
  // (scale, drain) already runs its built tag, which is copied like any image and never rebuilt from a context
  // that may not be on this side any more.
  if (!Object.values(request.project.services).some((s) => s.build !== undefined && !s.image.includes(":"))) {
    return await deployPrepared(machines, book, request, options, []);
  }
  const builder = pickBuilder(machines, options.builder);
  const saved = book.savedState(request.project.name)?.compose as NormalizedProject | undefined;
  const prepared = await prepareBuilds(request.project, builder, (event) => options.report.build?.(event), {
    noCache: options.noCache,
    current: Object.fromEntries(Object.entries(saved?.services ?? {}).map(([name, s]) => [name, s.image])),
  });
  try {
    return await deployPrepared(
      machines,
      book,
      { ...request, project: prepared.project },
      options,
      prepared.jobs,
      builder,
    );
  } finally {
    await discardBuilds(prepared.jobs);
  }
}

/** Runs the Deploy's build stage; a failure says the later stages were not attempted and nothing changed. */
async function runStages(jobs: BuildJob[], builder: Builder, options: FlowOptions): Promise<void> {
  try {
    await runBuilds(jobs, builder, (event) => options.report.build?.(event));
  } catch (error) {
    if (!(error instanceof OperatorError)) throw error;
    throw new OperatorError(
      error.code,
      `${error.message}; stages "distribute" and "deploy" not attempted, nothing changed`,
      { ...error.details, "not_attempted": ["distribute", "deploy"] },
    );
  }
}

/** A Deploy whose `build:` Services are prepared: each runs its tagged image, built on `builder` once confirmed. */
async function deployPrepared(
  machines: DeployMachines,
  book: DeployBook,
  request: { project: NormalizedProject; warnings: string[]; sourcePath: string; monitorMs?: number },
  options: FlowOptions,
  jobs: BuildJob[],
  builder?: Builder,
): Promise<FlowResult> {
  // Confirmed already (-y, not a dry run): the builds run while the Machines are observed and the plan is made,
  // and the Preview waits for them. A failed build still ends the Deploy before anything is saved or replaced.
  const early = builder !== undefined && options.yes && !options.dryRun && jobs.some((job) => !job.upToDate)
    ? runStages(jobs, builder, options).then(() => undefined, (error: unknown) => ({ error }))
    : undefined;
  const built = async (): Promise<void> => {
    if (early !== undefined) {
      const failed = await early;
      if (failed !== undefined) throw failed.error;
    } else if (builder !== undefined) await runStages(jobs, builder, options);
  };
  try {
    return await planAndRun(machines, book, request, options, {
      jobs,
      builder,
      built,
      early: early !== undefined,
    });
  } catch (error) {
    // The contexts are closed only once their uploads ended; a failed build, the earlier stage, is what is told.
    const failed = await early;
    throw failed?.error ?? error;
  }
}

/** Plans the prepared Deploy, runs its builds (`built`) once confirmed, then executes it. */
async function planAndRun(
  machines: DeployMachines,
  book: DeployBook,
  request: { project: NormalizedProject; warnings: string[]; sourcePath: string; monitorMs?: number },
  options: FlowOptions,
  builds: { jobs: BuildJob[]; builder?: Builder; built: () => Promise<void>; early: boolean },
): Promise<FlowResult> {
  const { jobs, builder, built } = builds;
  traceMark("deploy: Machines listed");
  // Every Machine runs the digest resolved here, once: a moved tag is a changed spec, never a mix.
  const pinning = pinImages(
    request.project,
    machines,
    options.registryAuth ?? (() => Promise.resolve(undefined)),
  );
  const ingress = { ...INGRESS, image: ingressImage() };
  // The Snapshot starts while the registry is asked; only the checks of the pinned references wait for them (the
  // Ingress Proxy's image is asked at once).
  const observing = observe(
    machines,
    request.project.name,
    pinning.then((p) => Object.values(p.project.services).map((s) => s.image)),
    // Each Machine's copies of the Project's Provisioned Volumes: their Writers decide where those Services run.
    {
      ingress: true,
      volumes: projectProvisionedVolumes(request.project),
      imagesAtOnce: [ingress.image],
      answerWithinMs: options.callTimeoutMs,
    },
  );
  pinning.then(() => traceMark("deploy: images pinned"), () => {});
  const [pinned, observed] = await Promise.allSettled([pinning, observing]);
  traceMark("deploy: Snapshot taken");
  if (pinned.status === "rejected") throw pinned.reason;
  if (observed.status === "rejected") throw observed.reason;
  const pins = pinned.value;
  const snapshot = observed.value;
  const project = pins.project;
  const previous = book.savedState(project.name)?.compose as NormalizedProject | undefined;
  const deployment = deploymentFor(book, project);
  // An image still to be built will be on the builder once built: the plan copies it from there.
  const building = snapshot.machines.find((m) => m.machineId === builder?.id);
  for (const job of jobs) if (!job.upToDate && building !== undefined) building.images[job.ref] = true;
  const intent = deployIntent(project, deployment.id, [...request.warnings, ...pins.warnings]);
  const plan = planDeploy({
    intent,
    snapshot,
    previous,
    monitorMs: request.monitorMs,
    serving: { ingress },
    images: pins.sources,
  });
  traceMark("deploy: planned");
  if (deployment.resumed) {
    plan.warnings.unshift(
      `Resuming Deployment ${deployment.id.slice(0, 8)}, which an earlier run left unfinished`,
    );
  }
  // Refuse before asking: the operator should not confirm a plan this Machine cannot run.
  if (!options.dryRun) await requirePlanCapabilities(plan, machines);
  // Confirmed already (-y, nothing to build, no Data Loss to confirm): the pulls start while the Preview prints and
  // the records are written.
  const pullsStarted = options.yes && !options.dryRun && jobs.length === 0 && plan.dataLoss.length === 0
    ? startPulls(plan, new Map(machines.handles.map((h) => [h.id, h.api])), options)
    : undefined;
  if (pullsStarted !== undefined) traceMark("deploy: pulls asked");
  if (builds.early) await built();
  const go = await confirmPlan(plan, options);
  const save = (): void =>
    book.saveState({
      project: project.name,
      compose: project,
      sourcePath: request.sourcePath,
      savedAt: new Date().toISOString(),
    });
  if (plan.ops.length === 0 && !options.dryRun) {
    // A build pending with nothing to run (a `--no-cache` build of a Service placed nowhere) still runs.
    await built();
    save();
    options.report.event({
      type: "outcome",
      outcome: {
        deploymentId: plan.deploymentId,
        project: plan.project,
        status: "succeeded",
        completed: [],
        notAttempted: [],
        compensation: [],
        retiring: [],
        observedAt: plan.observedAt,
      },
    });
    return { status: "unchanged", plan };
  }
  if (!go) return { status: options.dryRun ? "previewed" : "declined", plan };
  // Built before anything is saved or replaced: a failed build ends the Deploy here.
  await built();
  save();
  const outcome = await executeAndRecord(plan, machines, book, {
    ...options,
    record: { "intent_digest": intentDigest(project) },
    pullsStarted,
    routed: Object.entries(project.services).filter(([, s]) => s.ports.some((p) => p.kind === "ingress"))
      .map(([name]) => `${project.name}/${name}`),
  });
  return { status: "ran", plan, outcome };
}
