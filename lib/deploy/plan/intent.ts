/**
 * The Deploy Intent: the Project's Saved State (a normalized Compose document), the Deployment it admits and the
 * Services in dependency order.
 *
 * @module
 */

import type { NormalizedProject } from "../compose/types.ts";
import { DeployError } from "./errors.ts";

/** What a Deploy asks for. */
export interface DeployIntent {
  /** The Saved State the intent derives from. */
  project: NormalizedProject;
  /** The Deployment admitted. */
  deploymentId: string;
  /** Service names, dependencies first. */
  order: string[];
  /** Warnings from loading the file. */
  warnings: string[];
}

/** Orders Services so each comes after what it `depends_on`; ties by name. Refuses a cycle. */
export function serviceOrder(project: NormalizedProject): string[] {
  const names = Object.keys(project.services).sort();
  const done = new Set<string>();
  const visiting: string[] = [];
  const out: string[] = [];
  const visit = (name: string): void => {
    if (done.has(name)) return;
    const at = visiting.indexOf(name);
    if (at >= 0) {
      const cycle = [...visiting.slice(at), name].join(" -> ");
      throw new DeployError(
        "invalid_argument",
        `Cannot order Services of "${project.name}": cycle ${cycle}`,
        {
          cycle: [...visiting.slice(at), name],
        },
      );
    }
    visiting.push(name);
    // A dependency outside the file (filtered by profile) constrains nothing here.
    for (const dep of [...project.services[name].dependsOn].sort()) {
      if (project.services[dep] !== undefined) visit(dep);
    }
    visiting.pop();
    done.add(name);
    out.push(name);
  };
  for (const name of names) visit(name);
  return out;
}

/** Builds the intent of one Deploy. */
export function deployIntent(
  project: NormalizedProject,
  deploymentId: string,
  warnings: string[] = [],
): DeployIntent {
  return { project, deploymentId, order: serviceOrder(project), warnings };
}
