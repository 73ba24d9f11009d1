/**
 * The serving operations of a plan: a Service's Serving Pointer move after its changes, and the Ingress Proxy fills.
 *
 * @module
 */

import type { NormalizedService } from "../compose/types.ts";
import type { Snapshot } from "./snapshot.ts";
import type { ReplaceOp } from "./types.ts";
import { type Draft, isRunning } from "./draft.ts";

/**
 * The Serving Pointer move of one Service, when this Deploy changed its containers. Every container the Service
 * keeps must carry the Deployment the pointer names, or the retire loop would stop it: new containers join the
 * Deployment of the containers kept beside them (their spec is the same), and a Service whose kept containers
 * carry several Deployments keeps its pointer, with its replaced containers stopped by the client.
 */
export function pointOf(
  project: string,
  service: NormalizedService,
  deploymentId: string,
  slots: { changes: Draft[]; fresh: Draft[]; kept: Set<string> },
  warnings: string[],
): Draft | undefined {
  const replaced = slots.changes.filter((op): op is Omit<ReplaceOp, "index"> => op.kind === "replace");
  if (slots.fresh.length === 0 && replaced.length === 0) return undefined;
  const kept = [...slots.kept];
  if (kept.length > 1 || kept[0] === "") {
    warnings.push(
      `Service "${project}/${service.name}" keeps containers of several Deployments (${
        kept.map((d) => `"${d.slice(0, 8)}"`).join(", ")
      }): its Serving Pointer is not moved and this Deploy stops the containers it replaces`,
    );
    return undefined;
  }
  const target = kept[0] ?? deploymentId;
  for (const op of slots.fresh) {
    if (op.kind === "create" || op.kind === "replace") op.spec = { ...op.spec, deployment: target };
  }
  for (const op of replaced) if (op.order === "start-first") op.oldStop = "retire_loop";
  const last = slots.changes[slots.changes.length - 1];
  return {
    machineId: last.machineId,
    machineName: last.machineName,
    project,
    service: service.name,
    slot: "",
    kind: "point",
    deployment: target,
  };
}

/** Ingress Proxy fills: each observed participating Machine that accepts ingress and runs no Ingress Proxy. */
export function ingressOps(
  snapshot: Snapshot,
  ingress: { project: string; service: string; image?: string },
  deploymentId: string,
  warnings: string[],
): Draft[] {
  const out: Draft[] = [];
  for (const m of snapshot.machines) {
    if (m.phase !== "participating" || m.acceptsIngress === false || m.ingress === undefined) continue;
    if (m.ingress.some(isRunning)) continue;
    const image = ingress.image;
    if (m.ingress.length === 0 && image !== undefined && m.images[image] === false) {
      // A peer that holds the image can copy it over the mesh (planned by placeImages); else the slot stays empty.
      if (!snapshot.machines.some((peer) => peer.images[image] === true)) {
        warnings.push(
          `Ingress Proxy image "${image}" is on no observed Machine: the ingress slot of "${m.machineName}" stays empty`,
        );
        continue;
      }
    }
    out.push({
      machineId: m.machineId,
      machineName: m.machineName,
      project: ingress.project,
      service: ingress.service,
      slot: "1",
      kind: "ingress",
      action: m.ingress.length === 0 ? "create" : "start",
      deployment: deploymentId,
    });
  }
  return out;
}
