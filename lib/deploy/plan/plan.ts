/**
 * The planner: from a Deploy Intent and a Snapshot to an ordered list of operations, by these rules
 * (`ployz/src/deploy/planning*.rs`): Services in dependency order; per Service its `x-pre_deploy` hook, then its
 * slots 1..replicas (create a missing one, keep an UpToDate one, replace a changed one, start a stopped one), then
 * removals of extra slots; obsolete Services are removed last, and only from a complete Snapshot. A replacement is
 * start-first unless it publishes host ports or mounts a named volume; an explicit `update_config.order` wins.
 *
 * With {@linkcode ServingPlanOptions}, each Service whose containers change gets a `point` operation after its
 * changes (its Serving Pointer moves once they passed health), a start-first replacement leaves the old container
 * to its Machine's retire loop, and each observed Machine that accepts ingress and runs no Ingress Proxy gets an
 * `ingress` fill at the very end (docs/bets.md, bets 3 and 9).
 *
 * Placement across Machines: a replicated Service's slot stays on the Machine that already holds it, and an empty
 * slot goes to the eligible Machine with the fewest of the Service's slots (spread); a Global Service gets one slot
 * on every eligible Machine; `x-machines` limits the eligible Machines. A Machine that lacks an image pulls it from
 * its registry first (a `pull` operation), or gets it from a peer over the mesh (an `image` operation) when the
 * registry did not answer or the image has no registry. A Service mounting a Provisioned Volume runs on the Machine
 * holding the Volume's Writer, whatever `x-machines` names (only a Volume Run moves it).
 *
 * Whether a container is UpToDate is decided from evidence: its `spec_digest` against the digest of the desired
 * container spec. The Saved State of the previous Deploy only explains what changed.
 *
 * @module
 */

import type { NormalizedProject, VolumeMount } from "../compose/types.ts";
import { DeployError } from "./errors.ts";
import type { DeployIntent } from "./intent.ts";
import type { Snapshot } from "./snapshot.ts";
import type { DataLoss, ImageSource, Op, Plan, ServiceSummary } from "./types.ts";
import type { Draft } from "./draft.ts";
import { placeImages } from "./image_sources.ts";
import { planCompletion, planService, ref } from "./plan_service.ts";
import type { Placed } from "./slots.ts";
import { ingressOps } from "./serving_ops.ts";
import type { VolumePlacement } from "./volume_locality.ts";

/** Input of {@linkcode planDeploy}. */
export interface PlanOptions {
  /** What to deploy. */
  intent: DeployIntent;
  /** What was observed. */
  snapshot: Snapshot;
  /** The Saved State before this Deploy, to explain changes and find Data Loss. */
  previous?: NormalizedProject;
  /** Monitor period when a Service sets none (`--monitor`); default 5 s. */
  monitorMs?: number;
  /** Skip every health gate. */
  skipHealth?: boolean;
  /** Hook timeout when the hook sets none; default 5 min. */
  hookTimeoutMs?: number;
  /** The bridge network of a Machine whose record names none (an older daemon); default `ployz`. */
  network?: string;
  /** Plan Serving Pointer moves and Ingress Proxy fills; without it the client stops every replaced container. */
  serving?: ServingPlanOptions;
  /** The images the Project's Services run, pinned before planning, and whether their registry answered. */
  images?: ImageSource[];
}

/** How a plan serves: Serving Pointers, the retire loop, and the Ingress Proxy slots it fills. */
export interface ServingPlanOptions {
  /**
   * The Ingress Proxy's Project, Service and image: fill its slot on each observed Machine that accepts ingress.
   * A Machine the Snapshot saw without the image gets it from a peer that holds it; when no observed Machine
   * holds it, the slot is skipped with a warning (no registry to pull it from).
   */
  ingress?: { project: string; service: string; image?: string };
}

export { DEFAULT_HOOK_TIMEOUT_MS } from "./plan_service.ts";

/** Each Service of the Deploy (`order`) with the Services of the Project it names in `depends_on`. */
function serviceGraph(project: NormalizedProject, order: readonly string[]): Record<string, string[]> {
  const graph: Record<string, string[]> = {};
  for (const name of order) {
    graph[name] = project.services[name].dependsOn.filter((d) => Object.hasOwn(project.services, d));
  }
  return graph;
}

/** Computes the plan. Throws {@linkcode DeployError} when no plan can be made (cycle, no Machine, no image). */
export function planDeploy(options: PlanOptions): Plan {
  const { intent, snapshot } = options;
  const project = intent.project;
  const warnings = [...intent.warnings];
  for (const f of snapshot.failures) {
    warnings.push(
      `Machine "${f.machineName}" was not observed (${f.error.code}: ${f.error.message}): its containers are not in this plan`,
    );
  }
  for (const o of snapshot.omissions) warnings.push(`Machine "${o.machineName}" was not asked: ${o.reason}`);
  if (!snapshot.machines.some((m) => m.phase === "participating")) {
    // Say why each Machine cannot: the Snapshot's failures carry the reason (Docker down, socket gone).
    const seen = [
      ...snapshot.machines.map((m) => `"${m.machineName}" is ${m.phase}`),
      ...snapshot.failures.map((f) => `"${f.machineName}" was not observed (${f.error.message})`),
    ].join(", ");
    throw new DeployError(
      "unavailable",
      `No observed Machine can run containers${seen === "" ? "" : `: ${seen}`}${
        snapshot.machines.some((m) => m.phase === "uninitialized") ? ' (run "ployz machine init")' : ""
      }`,
    );
  }
  const byService = new Map<string, Placed[]>();
  let observedContainers = 0;
  for (const machine of snapshot.machines) {
    for (const container of machine.containers) {
      observedContainers++;
      const list = byService.get(container.service) ?? [];
      list.push({ machine, container });
      byService.set(container.service, list);
    }
  }
  const drafts: Draft[] = [];
  const services: ServiceSummary[] = [];
  const pinned: VolumePlacement[] = [];
  // Services some dependant waits to complete (`service_completed_successfully`) run once, to exit 0, first.
  const completes = new Set(
    Object.values(project.services).flatMap((s) =>
      Object.entries(s.dependsOnConditions ?? {}).filter(([, c]) => c === "service_completed_successfully")
        .map(([dependency]) => dependency)
    ),
  );
  for (const name of intent.order) {
    const placedHere = byService.get(name) ?? [];
    const planned = completes.has(name)
      ? planCompletion(options, project.services[name], placedHere)
      : planService(options, project.services[name], placedHere, warnings, pinned);
    drafts.push(...planned.ops);
    services.push(planned.summary);
  }
  const dataLoss: DataLoss[] = [];
  // A Service left out by profiles is not obsolete: its containers from an earlier Deploy stay as they are.
  const profiledOut = new Set(project.profiledOut ?? []);
  for (const name of [...byService.keys()].filter((s) => profiledOut.has(s)).sort()) {
    warnings.push(
      `Service "${project.name}/${name}" is not in this Deploy (none of its profiles is enabled): its running containers are left as they are`,
    );
  }
  const obsolete = [...byService.keys()].filter((s) =>
    project.services[s] === undefined && !profiledOut.has(s)
  )
    .sort();
  if (obsolete.length > 0 && snapshot.failures.length > 0) {
    warnings.push(
      `Not removing Services no longer in the file (${
        obsolete.map((s) => `"${s}"`).join(", ")
      }): the Snapshot is incomplete`,
    );
  } else {
    for (const name of obsolete) {
      for (const p of byService.get(name)!) {
        drafts.push({
          machineId: p.machine.machineId,
          machineName: p.machine.machineName,
          project: project.name,
          service: name,
          slot: p.container.slot,
          kind: "remove",
          container: ref(p.container),
          reason: "obsolete_service",
        });
      }
      const before = options.previous?.services[name];
      const volumes = before?.mounts.filter((m): m is VolumeMount =>
        m.type === "volume" && m.source !== ""
      ).map((m) => options.previous?.volumes[m.source]?.dockerName ?? m.source) ?? [];
      if (volumes.length > 0) {
        dataLoss.push({
          name: `${project.name}/${name}`,
          reason: `Service "${project.name}/${name}" is removed with the containers that use volume ${
            volumes.map((v) =>
              `"${v}"`
            ).join(", ")
          }`,
        });
      } else if (before === undefined) {
        warnings.push(
          `Service "${project.name}/${name}" is removed; the Saved State does not say what it mounted`,
        );
      }
    }
  }
  // Last: a taken port 80 fails the fill, and must not keep the Project's own containers from changing.
  if (options.serving?.ingress !== undefined) {
    drafts.push(...ingressOps(snapshot, options.serving.ingress, intent.deploymentId, warnings));
  }
  const placed = placeImages(drafts, snapshot, options.serving?.ingress?.image, options.images ?? []);
  return {
    deploymentId: intent.deploymentId,
    project: project.name,
    ops: placed.map((op, index) => ({ ...op, index }) as Op),
    dependsOn: serviceGraph(project, intent.order),
    warnings,
    dataLoss,
    ...(options.images === undefined || options.images.length === 0 ? {} : { images: options.images }),
    services,
    observedContainers,
    observedAt: snapshot.observedAt,
    ...(pinned.length === 0 ? {} : { volumePlacements: pinned }),
  };
}
