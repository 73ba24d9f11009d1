/**
 * Deploy Progress and Outcome as text: a table redrawn in place on a terminal, one line per step otherwise, and a
 * closing summary of what was observed, done, failed and not attempted.
 *
 * @module
 */

import { describeOp, opTarget } from "../plan/preview.ts";
import type { Op } from "../plan/types.ts";
import type { DeployEvent } from "./events.ts";
import { type DeployStage, drainText, opStage, type Outcome } from "./outcome.ts";

/** The heading line progress prints when `stage` begins. */
export function stageHeading(stage: DeployStage): string {
  return `--- ${stage} ---\n`;
}

/** Receives events; `finish` flushes what is left. */
export interface ProgressPrinter {
  /** Handles one event. */
  event(event: DeployEvent): void;
}

interface Row {
  op: Op;
  status: string;
}

/** Progress as a table redrawn in place (`tty`) or as one line per step. `write` gets whole chunks of text. */
export function progressPrinter(write: (text: string) => void, options: { tty: boolean }): ProgressPrinter {
  const rows: Row[] = [];
  let drawn = 0;
  // Line mode: the stage whose heading was printed last; an image copied before each Machine's first operation
  // makes the stages alternate, and each change is shown.
  let stage: DeployStage | undefined;
  const redraw = (): void => {
    const width = Math.max(0, ...rows.map((r) => opTarget(r.op).length));
    const lines: string[] = [];
    rows.forEach((r, i) => {
      if (i === 0 || opStage(rows[i - 1].op) !== opStage(r.op)) {
        lines.push(`\x1b[2K${stageHeading(opStage(r.op))}`);
      }
      lines.push(
        `\x1b[2K  ${String(r.op.index + 1).padStart(2)}. ${r.op.kind.padEnd(7)} ${
          opTarget(r.op).padEnd(width)
        }  ${r.status}\n`,
      );
    });
    write((drawn > 0 ? `\x1b[${drawn}A` : "") + lines.join(""));
    drawn = lines.length;
  };
  return {
    event(event: DeployEvent): void {
      if (event.type === "plan") {
        rows.push(...event.ops.map((op) => ({ op, status: "pending" })));
        if (options.tty) redraw();
        return;
      }
      if (event.type === "outcome") return;
      const row = rows[event.index];
      if (row === undefined) return;
      let line: string;
      if (event.type === "compensation") {
        const s = event.step;
        line = `compensation: ${s.action === "stop_new" ? "stopped" : "restarted"} ${s.container.name}${
          s.ok ? "" : ` failed: ${s.error?.message}`
        }`;
      } else if (event.status === "running") {
        line = `${event.phase.replaceAll("_", " ")}${event.detail === undefined ? "" : ` ${event.detail}`}`;
      } else if (event.status === "completed") {
        line = "done";
      } else {
        line = `${
          event.outcomeUnknown ? "outcome unknown (sent, no answer)" : "failed"
        }: ${event.error.message}`;
      }
      row.status = line;
      if (options.tty) redraw();
      else {
        const heading = stage === opStage(row.op) ? "" : stageHeading(opStage(row.op));
        stage = opStage(row.op);
        write(`${heading}[${row.op.index + 1}/${rows.length}] ${row.op.kind} ${opTarget(row.op)}: ${line}\n`);
      }
    },
  };
}

/** The closing summary of a Deploy. */
export function renderOutcome(outcome: Outcome): string {
  const lines: string[] = [];
  const head = outcome.status === "succeeded"
    ? `Deploy of "${outcome.project}" succeeded`
    : outcome.status === "partial"
    ? `Deploy of "${outcome.project}" partly done`
    : `Deploy of "${outcome.project}" failed`;
  lines.push(`${head} (Deployment ${outcome.deploymentId.slice(0, 8)}, at ${outcome.observedAt})`);
  lines.push(`Done (${outcome.completed.length}):`);
  for (const op of outcome.completed) lines.push(`  - ${describeOp(op)}`);
  const retiring = outcome.retiring ?? [];
  const leaving = retiring.filter((r) => r.pointerMoved);
  if (leaving.length > 0) {
    lines.push(
      `Left for the retire loop (${leaving.length}): each stops once every Machine not Down acked the moved Serving Pointer, or after the bound:`,
    );
    for (const r of leaving) lines.push(`  - ${r.container.name} on ${r.machineName}`);
  }
  const serving = retiring.filter((r) => !r.pointerMoved);
  if (serving.length > 0) {
    lines.push(
      `Still running beside their replacement (${serving.length}): the Serving Pointer was not moved:`,
    );
    for (const r of serving) lines.push(`  - ${r.container.name} on ${r.machineName}`);
  }
  const left = outcome.left ?? [];
  if (left.length > 0) {
    lines.push(`Left every proxy before stopping (${left.length}):`);
    for (const l of left) {
      const how = l.skipped !== undefined
        ? `not left first: ${l.skipped}`
        : l.missing.length === 0
        ? `acked by ${l.acked.length} Machine${l.acked.length === 1 ? "" : "s"} in ${l.waitedMs} ms`
        : `stopped after ${l.waitedMs} ms without the ack of ${l.missing.length} Machine${
          l.missing.length === 1 ? "" : "s"
        } (${l.missing.join(", ")})`;
      lines.push(`  - ${l.container.name} on ${l.machineName}: ${how}${drainText(l)}`);
    }
  }
  for (const f of outcome.failed === undefined ? [] : [outcome.failed, ...(outcome.alsoFailed ?? [])]) {
    lines.push(
      f.outcomeUnknown
        ? `Outcome unknown (the request was sent and no answer came; it may have acted): ${describeOp(f.op)}`
        : `Failed at stage "${opStage(f.op)}": ${describeOp(f.op)}`,
    );
    lines.push(`  error[${f.error.code}]: ${f.error.message}`);
    const logs = f.evidence?.logs;
    if (typeof logs === "string" && logs.trim() !== "") {
      lines.push("  last log lines:");
      for (const l of logs.trimEnd().split("\n").slice(-10)) lines.push(`    ${l}`);
    }
  }
  if (outcome.compensation.length > 0) {
    lines.push("Compensation:");
    for (const s of outcome.compensation) {
      const what = s.action === "stop_new"
        ? `stopped new container ${s.container.name} (kept as evidence)`
        : `restarted old container ${s.container.name}`;
      lines.push(`  - ${what}${s.ok ? "" : `: failed: ${s.error?.message}`}`);
    }
  }
  if (outcome.notAttempted.length > 0) {
    lines.push(`Not attempted (${outcome.notAttempted.length}):`);
    for (const op of outcome.notAttempted) lines.push(`  - ${describeOp(op)}`);
  }
  return lines.join("\n") + "\n";
}
