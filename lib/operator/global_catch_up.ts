// Global catch-up after `ployz machine add`: one bounded pass over this operator's Saved States that places each
// Global Service (and the Ingress Proxy, itself Global) on the Machine that just joined. It only creates on that
// Machine (its images are the digests the last Deploy pinned, pulled or copied from a peer by the Deploy's rules; no
// tag is resolved again), never replaces, moves or removes anything, never retries, and says per
// Project what it placed, what failed and where it could not tell whether the Machine is eligible (docs/bets.md, bet 3:
// no background reconciler; the operator's next Deploy finishes whatever this pass left).
import {
  deployIntent,
  errorBody,
  newDeploymentId,
  type NormalizedProject,
  type NormalizedService,
  type Op,
  type Plan,
  planDeploy,
} from "../deploy/mod.ts";
import { INGRESS_PROJECT, INGRESS_SERVICE, ingressImage } from "../serving/mod.ts";
import type { DeployMachines } from "./deploy_machines.ts";
import { type DeployBook, type DeployReport, executeAndRecord, observe } from "./deploy_flow.ts";
import { type AuthLookup, pinnedSources } from "./image_pins.ts";

/** What the pass did for one Project. */
export interface CatchUpResult {
  /** Project name. */
  project: string;
  /** `placed`, `failed`, `nothing` (nothing to place) or `unknown` (eligibility could not be observed). */
  status: "placed" | "failed" | "nothing" | "unknown";
  /** One sentence for people. */
  detail: string;
}

/** The Machine that joined. */
export interface Joined {
  /** Machine id. */
  id: string;
  /** Machine Name. */
  name: string;
}

/** How the pass reaches the Cluster and shows its progress. */
export interface CatchUpOptions {
  /** Opens the Cluster's Machines; called only when some Project has a Global Service to place. */
  open: () => Promise<DeployMachines & Disposable>;
  /** Progress and Outcome of each Project's run. */
  report: DeployReport;
  /** Called before a Project's operations run, with how many there are. */
  placing?: (project: string, operations: number) => void;
  /** Registry credentials by host, from the operator's side; sent only with the pulls that need them. */
  registryAuth?: AuthLookup;
}

function eligible(service: NormalizedService, joined: Joined): boolean {
  return service.machines.length === 0 || service.machines.includes(joined.name) ||
    service.machines.includes(joined.id);
}

/**
 * The plan's creations on the joined Machine for Global Services, with the image pulls and copies and the pointer
 * moves they need.
 */
export function catchUpOps(plan: Plan, project: NormalizedProject, joined: Joined): Op[] {
  const global = (op: Op): boolean => project.services[op.service]?.mode === "global";
  const creates = plan.ops.filter((op) =>
    op.machineId === joined.id &&
    ((op.kind === "create" && global(op)) || op.kind === "ingress")
  );
  const needed = new Set(creates.map((op) => op.kind === "create" ? op.spec.image : ""));
  const services = new Set(creates.map((op) => op.service));
  return plan.ops.filter((op) =>
    creates.includes(op) ||
    ((op.kind === "image" || op.kind === "pull") && op.machineId === joined.id &&
      (needed.has(op.ref) || op.project === INGRESS_PROJECT)) ||
    // A Service that never had a Serving Pointer gets one; an existing pointer already names the joined Deployment.
    (op.kind === "point" && services.has(op.service) && op.deployment === plan.deploymentId)
  );
}

async function catchUpProject(
  machines: DeployMachines,
  book: DeployBook,
  project: NormalizedProject,
  joined: Joined,
  options: CatchUpOptions & { ingress: boolean },
): Promise<CatchUpResult> {
  const name = project.name;
  const image = ingressImage();
  const images = [
    ...Object.values(project.services).map((s) => s.image),
    ...(options.ingress ? [image] : []),
  ];
  const snapshot = await observe(machines, name, images, { ingress: options.ingress });
  const seen = snapshot.machines.find((m) => m.machineId === joined.id);
  if (seen === undefined || seen.phase !== "participating") {
    const failure = snapshot.failures.find((f) => f.machineId === joined.id);
    const why = failure !== undefined
      ? `${failure.error.code}: ${failure.error.message}`
      : seen !== undefined
      ? `it is ${seen.phase}`
      : "the Entry Machine does not list it";
    return { project: name, status: "unknown", detail: `Machine "${joined.name}" was not observed (${why})` };
  }
  const deploymentId = newDeploymentId();
  // The Saved State names the digests its Deploy pinned: the joined Machine runs those, pulled from their registry
  // or copied from a peer, and no tag is resolved again (it may point elsewhere by now).
  const auth = options.registryAuth ?? (() => Promise.resolve(undefined));
  const sources = await pinnedSources(project, machines, auth);
  let plan: Plan;
  try {
    plan = planDeploy({
      intent: deployIntent(project, deploymentId),
      snapshot,
      previous: project,
      images: sources,
      serving: options.ingress
        ? { ingress: { project: INGRESS_PROJECT, service: INGRESS_SERVICE, image } }
        : {},
    });
  } catch (error) {
    return { project: name, status: "failed", detail: `cannot plan: ${errorBody(error).message}` };
  }
  const ops = catchUpOps(plan, project, joined).map((op, index) => ({ ...op, index }) as Op);
  if (ops.length === 0) {
    return { project: name, status: "nothing", detail: `nothing to place on "${joined.name}"` };
  }
  options.placing?.(name, ops.length);
  const outcome = await executeAndRecord({ ...plan, ops, warnings: [], dataLoss: [] }, machines, book, {
    report: options.report,
    registryAuth: options.registryAuth,
    record: { "catch_up": joined.id },
  });
  const created = ops.filter((op) => op.kind === "create" || op.kind === "ingress").length;
  return outcome.status === "succeeded"
    ? { project: name, status: "placed", detail: `${created} container(s) placed on "${joined.name}"` }
    : { project: name, status: "failed", detail: `stopped at the first failure (see the Outcome above)` };
}

/**
 * Places this operator's Global Services on `joined`, Project by Project, once. Projects without a Global Service
 * eligible for it are left out (with none, no Machine is asked and the answer is empty). The Ingress Proxy's slot
 * on `joined` is filled with the first Project; with none, the operator's next Deploy fills it.
 */
export async function catchUpGlobal(
  book: DeployBook,
  joined: Joined,
  options: CatchUpOptions,
): Promise<CatchUpResult[]> {
  const projects = book.savedProjects()
    .map((name) => book.savedState(name)?.compose as NormalizedProject | undefined)
    .filter((p): p is NormalizedProject =>
      p !== undefined &&
      Object.values(p.services ?? {}).some((s) => s.mode === "global" && eligible(s, joined))
    );
  if (projects.length === 0) return [];
  using machines = await options.open();
  const results: CatchUpResult[] = [];
  for (const [i, project] of projects.entries()) {
    try {
      results.push(await catchUpProject(machines, book, project, joined, { ...options, ingress: i === 0 }));
    } catch (error) {
      const { code, message } = errorBody(error);
      results.push({ project: project.name, status: "unknown", detail: `${code}: ${message}` });
    }
  }
  return results;
}
