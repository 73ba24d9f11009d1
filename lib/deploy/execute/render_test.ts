import assert from "node:assert/strict";
import type { ImageOp } from "../plan/types.ts";
import { type Outcome, outcomeJson } from "./outcome.ts";
import { progressPrinter, renderOutcome, stageHeading } from "./render.ts";

/** An Outcome of project `bld` that failed at `op` (m1 gone), with `fields` replacing what they name. */
function failedAt(op: ImageOp, fields: Record<string, unknown> = {}): Outcome {
  return {
    deploymentId: "d".repeat(32),
    project: "bld",
    status: "failed",
    completed: [],
    failed: { op, error: { code: "unavailable", message: "m1 is gone", details: {} }, evidence: null },
    notAttempted: [],
    compensation: [],
    retiring: [],
    observedAt: "2026-12-01T00:00:00Z",
    ...fields,
  } as Outcome;
}

Deno.test("renderOutcome names a failed peer copy or pull as the distribute stage, a failed container operation not", () => {
  const copy = opOf(1, "image");
  const outcome = failedAt(copy);
  assert.match(
    renderOutcome(outcome),
    /^Failed at stage "distribute": copy image "bld-web:0123456789abcdef" from "m1" to "m2" over the mesh$/m,
  );
  const pull = { ...copy, kind: "pull", registry: "registry.example", reason: "no peer holds it" } as never;
  assert.match(
    renderOutcome({ ...outcome, failed: { ...outcome.failed!, op: pull } }),
    /^Failed at stage "distribute": pull/m,
  );
  const stopped = {
    ...outcome,
    failed: { ...outcome.failed!, op: { ...copy, kind: "stop", container: { name: "bld-web-1" } } as never },
  };
  assert.doesNotMatch(renderOutcome(stopped), /stage "distribute"/);
  assert.match(renderOutcome(stopped), /^Failed at stage "deploy": /m);
});

Deno.test("outcomeJson carries the stage of each failure: distribute for an image, deploy for the rest", () => {
  const outcome = failedAt(opOf(0, "image"), {
    status: "partial",
    alsoFailed: [{
      op: opOf(1, "create"),
      error: { code: "internal", message: "no", details: {} },
      evidence: null,
    }],
  });
  const json = outcomeJson(outcome) as {
    failed: { stage: string };
    "also_failed": { stage: string }[];
  };
  assert.equal(json.failed.stage, "distribute");
  assert.deepEqual(json.also_failed.map((f) => f.stage), ["deploy"]);
});

function opOf(index: number, kind: "image" | "create"): ImageOp {
  return {
    kind,
    index,
    machineId: "b".repeat(32),
    machineName: `m${index + 1}`,
    project: "bld",
    service: "web",
    slot: "",
    ref: "bld-web:0123456789abcdef",
    fromMachineId: "a".repeat(32),
    fromMachineName: "m1",
    container: { name: `bld-web-${index}` },
  } as unknown as ImageOp;
}

Deno.test("progress shows distribute and deploy as headings, each time the stage changes", () => {
  const ops = [opOf(0, "image"), opOf(1, "create"), opOf(2, "image"), opOf(3, "create")];
  const lines: string[] = [];
  const printer = progressPrinter((t) => lines.push(t), { tty: false });
  printer.event({ type: "plan", deploymentId: "d", ops });
  for (const op of ops) printer.event({ type: "step", index: op.index, status: "completed" });
  const text = lines.join("");
  const headings = text.split("\n").filter((l) => l.startsWith("---"));
  assert.deepEqual(headings, [
    "--- distribute ---",
    "--- deploy ---",
    "--- distribute ---",
    "--- deploy ---",
  ]);
  assert.ok(text.startsWith(stageHeading("distribute") + "[1/4] image "), text);

  const drawn: string[] = [];
  const table = progressPrinter((t) => drawn.push(t), { tty: true });
  table.event({ type: "plan", deploymentId: "d", ops: ops.slice(0, 2) });
  table.event({ type: "step", index: 0, status: "completed" });
  // Two headings and two rows: the redraw moves up all four lines.
  assert.ok(drawn[1].startsWith("\x1b[4A"), JSON.stringify(drawn[1]));
  assert.equal(drawn[1].split("\n").filter((l) => l.includes("---")).length, 2);
});
