/**
 * The Deploy Preview as text: what will be created, replaced, started, stopped and removed, warnings, and Data
 * Loss with the exact names that confirm it.
 *
 * @module
 */

import type { Op, Plan } from "./types.ts";
import { describePlacement } from "./volume_locality.ts";
import { describeMs } from "../../util/mod.ts";

/** The Service and slot an operation acts on, `web/2`. */
export function opTarget(op: Op): string {
  if (op.kind === "hook") {
    return op.slot === "run" ? `${op.service} (runs to completion)` : `${op.service} (pre-deploy hook)`;
  }
  if (op.kind === "point") return `${op.service} (serving)`;
  if (op.kind === "ingress") return `${op.project}/${op.service}`;
  if (op.kind === "image" || op.kind === "pull") return op.ref;
  return `${op.service}/${op.slot}`;
}

/** One line describing an operation. */
export function describeOp(op: Op): string {
  switch (op.kind) {
    case "create":
      return `create ${op.spec.name} from "${op.spec.image}"`;
    case "replace": {
      const why = op.changed.length > 0 ? ` (${op.changed.join(", ")} changed)` : " (spec changed)";
      const old = op.oldStop === "retire_loop" ? `; ${op.old.name} is left for the retire loop` : "";
      const rolls = op.parallelism === undefined
        ? ""
        : `, ${
          op.parallelism === 0 ? "all at once" : `${op.parallelism} at a time`
        } (update_config.parallelism)`;
      const pause = op.delayMs === undefined
        ? ""
        : `, waiting ${describeMs(op.delayMs)} after the one before it (update_config.delay)`;
      const how = `${op.order} (${op.orderReason})${rolls}${pause}`;
      return `replace ${op.old.name} with ${op.spec.name}, ${how}${why}${old}`;
    }
    case "point":
      return `point "${op.project}/${op.service}" at Deployment ${
        op.deployment.slice(0, 8)
      } once its containers passed health`;
    case "ingress":
      return `${op.action} the Ingress Proxy on "${op.machineName}" (never replaced or removed)`;
    case "image":
      return `copy image "${op.ref}" from "${op.fromMachineName}" to "${op.machineName}" over the mesh${
        op.reason === undefined ? "" : `: ${op.reason}`
      }`;
    case "pull":
      return `pull image "${op.ref}" on "${op.machineName}" from registry "${op.registry}": ${op.reason}`;
    case "start":
      return `start ${op.container.name}`;
    case "stop":
      return `stop ${op.container.name}`;
    case "remove":
      return `remove ${op.container.name} (${op.reason.replaceAll("_", " ")})`;
    case "hook":
      return `run ${JSON.stringify(op.spec.cmd ?? [])} in ${op.spec.name}, up to ${
        Math.round(op.timeoutMs / 1000)
      } s`;
  }
}

/** `Nothing to do: 3 containers up to date`, or undefined when the plan has operations. */
export function nothingToDo(plan: Plan): string | undefined {
  if (plan.ops.length > 0) return undefined;
  const n = plan.services.reduce((sum, s) => sum + s.upToDate, 0);
  return `Nothing to do: ${n} container${n === 1 ? "" : "s"} up to date`;
}

/** The Preview, as printed before confirming. */
export function renderPreview(plan: Plan): string {
  const lines: string[] = [];
  const machines = new Set(plan.ops.map((op) => op.machineName));
  lines.push(
    `Deploy "${plan.project}" (Deployment ${
      plan.deploymentId.slice(0, 8)
    }): observed ${plan.observedContainers} container${
      plan.observedContainers === 1 ? "" : "s"
    } at ${plan.observedAt}`,
  );
  const idle = nothingToDo(plan);
  if (idle !== undefined) lines.push(idle);
  else {
    const width = Math.max(...plan.ops.map((op) => opTarget(op).length));
    for (const op of plan.ops) {
      const on = machines.size > 1 ? ` on ${op.machineName}` : "";
      lines.push(
        `  ${String(op.index + 1).padStart(2)}. ${op.kind.padEnd(7)} ${opTarget(op).padEnd(width)}  ${
          describeOp(op)
        }${on}`,
      );
    }
  }
  // Only pinned images: one built or loaded on a Machine has no digest to show.
  const pinned = (plan.images ?? []).filter((image) => image.digest !== undefined);
  if (pinned.length > 0) {
    lines.push("Images:");
    for (const image of pinned) {
      lines.push(`  - ${image.written} → ${image.digest} (from ${image.from}; ${image.services.join(", ")})`);
    }
  }
  if ((plan.volumePlacements ?? []).length > 0) {
    lines.push("Placed by Volume:");
    for (const p of plan.volumePlacements!) lines.push(`  - ${describePlacement(plan.project, p)}`);
  }
  if (plan.warnings.length > 0) {
    lines.push("Warnings:");
    for (const w of plan.warnings) lines.push(`  - ${w}`);
  }
  if (plan.dataLoss.length > 0) {
    lines.push(`Data Loss (confirm with --confirm-data-loss ${plan.dataLoss.map((d) => d.name).join(",")}):`);
    for (const d of plan.dataLoss) lines.push(`  - ${d.name}: ${d.reason}`);
  }
  return lines.join("\n") + "\n";
}
