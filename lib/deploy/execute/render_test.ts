import assert from "node:assert/strict";
import type { ImageOp } from "../plan/types.ts";
import { renderOutcome } from "./render.ts";

Deno.test("renderOutcome names a failed peer copy or pull as the distribute stage, a failed container operation not", () => {
  const copy: ImageOp = {
    kind: "image",
    index: 0,
    machineId: "b".repeat(32),
    machineName: "m2",
    project: "bld",
    service: "web",
    slot: "",
    ref: "bld-web:0123456789abcdef",
    fromMachineId: "a".repeat(32),
    fromMachineName: "m1",
  };
  const outcome = {
    deploymentId: "d".repeat(32),
    project: "bld",
    status: "failed" as const,
    completed: [],
    failed: { op: copy, error: { code: "unavailable", message: "m1 is gone", details: {} }, evidence: null },
    notAttempted: [],
    compensation: [],
    retiring: [],
    observedAt: "2026-12-01T00:00:00Z",
  };
  assert.match(
    renderOutcome(outcome),
    /^Failed at stage "distribute": copy image "bld-web:0123456789abcdef" from "m1" to "m2" over the mesh$/m,
  );
  const pull = { ...copy, kind: "pull", registry: "registry.example", reason: "no peer holds it" } as never;
  assert.match(
    renderOutcome({ ...outcome, failed: { ...outcome.failed, op: pull } }),
    /^Failed at stage "distribute": pull/m,
  );
  assert.doesNotMatch(
    renderOutcome({
      ...outcome,
      failed: { ...outcome.failed, op: { ...copy, kind: "stop", container: { name: "bld-web-1" } } as never },
    }),
    /stage "distribute"/,
  );
});
