import assert from "node:assert/strict";
import type { ContainerSpec, Plan } from "../deploy/mod.ts";
import { containerSpec } from "../deploy/testing/mod.ts";
import { CAPABILITIES } from "../rpc/mod.ts";
import { planCapabilities } from "./capabilities.ts";

function plan(spec: ContainerSpec): Plan {
  const op = {
    index: 0,
    kind: "create",
    machineId: "m1",
    machineName: "one",
    project: "shop",
    service: "web",
    slot: "1",
    spec,
    health: null,
  };
  return { ops: [op] } as unknown as Plan;
}

Deno.test("a container that ships files needs ensure_with_files: an older daemon is refused up front", () => {
  const spec = containerSpec();
  assert.ok(!planCapabilities(plan(spec)).includes(CAPABILITIES.ensureContainerWithFiles));
  const shipping = { ...spec, files: [{ target: "/run/secrets/pw", digest: `sha256:${"0".repeat(64)}` }] };
  const needed = planCapabilities(plan(shipping));
  assert.ok(needed.includes("ployz.container.ensure_with_files.v1"), needed.join(", "));
});
