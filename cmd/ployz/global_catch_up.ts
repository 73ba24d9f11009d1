// Global catch-up after `ployz machine add`: one bounded pass over this operator's Saved States that places each
// Global Service (and the Ingress Proxy, itself Global) on the Machine that just joined. It only creates on that
// Machine (copying images from peers first), never replaces, moves or removes anything, never retries, and says per
// Project what it placed, what failed and where it could not tell whether the Machine is eligible (docs/bets.md, bet 3:
// no background reconciler; the operator's next Deploy finishes whatever this pass left).
import type { Io } from "../../lib/cli/mod.ts";
import {
  deployIntent,
  errorBody,
  newDeploymentId,
  type NormalizedProject,
  type NormalizedService,
  type Op,
  type Plan,
  planDeploy,
} from "../../lib/deploy/mod.ts";
import { INGRESS_PROJECT, INGRESS_SERVICE, ingressImage } from "../../lib/serving/mod.ts";
import type { ConfigStore } from "../../lib/store/mod.ts";
import { type DeployMachines, withDeployMachines } from "./deploy_machines.ts";
import { executeAndReport, observe } from "./deploy_flow.ts";
import { jsonLine } from "./connect.ts";

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

function eligible(service: NormalizedService, joined: Joined): boolean {
  return service.machines.length === 0 || service.machines.includes(joined.name) ||
    service.machines.includes(joined.id);
}

/** The plan's creations on the joined Machine for Global Services, with the image copies and pointer moves they need. */
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
    (op.kind === "image" && op.machineId === joined.id &&
      (needed.has(op.ref) || op.project === INGRESS_PROJECT)) ||
    // A Service that never had a Serving Pointer gets one; an existing pointer already names the joined Deployment.
    (op.kind === "point" && services.has(op.service) && op.deployment === plan.deploymentId)
  );
}

async function catchUpProject(
  machines: DeployMachines,
  config: ConfigStore,
  project: NormalizedProject,
  joined: Joined,
  options: { io: Io; json: boolean; ingress: boolean },
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
  let plan: Plan;
  try {
    plan = planDeploy({
      intent: deployIntent(project, deploymentId),
      snapshot,
      previous: project,
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
  if (!options.json) {
    options.io.out(`Global catch-up of "${name}" on "${joined.name}": ${ops.length} operation(s)\n`);
  }
  const code = await executeAndReport({ ...plan, ops, warnings: [], dataLoss: [] }, machines, config, {
    io: options.io,
    json: options.json,
    yes: true,
    dryRun: false,
    confirmDataLoss: [],
    verb: "catch up",
    record: { "catch_up": joined.id },
  });
  const created = ops.filter((op) => op.kind === "create" || op.kind === "ingress").length;
  return code === 0
    ? { project: name, status: "placed", detail: `${created} container(s) placed on "${joined.name}"` }
    : { project: name, status: "failed", detail: `stopped at the first failure (see the Outcome above)` };
}

/**
 * Places this operator's Global Services on `joined`, Project by Project, once. Projects without a Global Service
 * eligible for it are left out. The Ingress Proxy's slot on `joined` is filled with the first Project; with none,
 * the operator's next Deploy fills it.
 */
export async function catchUpGlobal(
  config: ConfigStore,
  joined: Joined,
  options: { io: Io; json: boolean },
): Promise<CatchUpResult[]> {
  const projects = config.savedProjects()
    .map((name) => config.savedState(name)?.compose as NormalizedProject | undefined)
    .filter((p): p is NormalizedProject =>
      p !== undefined &&
      Object.values(p.services ?? {}).some((s) => s.mode === "global" && eligible(s, joined))
    );
  if (projects.length === 0) {
    // Nothing to place: no Machine is asked, and --json keeps its one object.
    if (!options.json) {
      options.io.out(
        `Global catch-up: no Global Service in this operator's Saved States to place on "${joined.name}"\n`,
      );
    }
    return [];
  }
  return await withDeployMachines(async (machines) => {
    const results: CatchUpResult[] = [];
    for (const [i, project] of projects.entries()) {
      try {
        results.push(
          await catchUpProject(machines, config, project, joined, { ...options, ingress: i === 0 }),
        );
      } catch (error) {
        const { code, message } = errorBody(error);
        results.push({ project: project.name, status: "unknown", detail: `${code}: ${message}` });
      }
    }
    if (options.json) options.io.out(jsonLine({ type: "catch_up", machine: joined, results }));
    else {
      for (const r of results) {
        options.io.out(`Global catch-up of "${r.project}": ${r.status}: ${r.detail}\n`);
      }
    }
    return results;
  });
}
