import assert from "node:assert/strict";
import { deployIntent } from "../plan/intent.ts";
import { planDeploy } from "../plan/plan.ts";
import { serviceContainerSpec } from "../plan/container_spec.ts";
import { FakeMachine, project, service, snapshotOf } from "../plan/test_fake.ts";
import type { NormalizedProject } from "../compose/types.ts";
import { executePlan, type IngressFiller } from "./execute.ts";
import { renderOutcome } from "./render.ts";
import { DeployError } from "../plan/errors.ts";

const D1 = "d1".padEnd(32, "0");
const D2 = "d2".padEnd(32, "0");
const INGRESS = { project: "ployz-system", service: "caddy" };

async function run(p: NormalizedProject, m: FakeMachine, fillIngress?: IngressFiller) {
  const plan = planDeploy({
    intent: deployIntent(p, D2),
    snapshot: await snapshotOf(m, p.name, INGRESS),
    serving: { ingress: INGRESS },
  });
  return await executePlan(plan, new Map([[m.id, m]]), { hookPollMs: 1, fillIngress });
}

function seed(m: FakeMachine, p: NormalizedProject, name: string, state = "running"): string {
  return m.add(serviceContainerSpec(p, p.services[name], { deploymentId: D1, slot: "1" }), state).name;
}

function withProxy(m: FakeMachine): FakeMachine {
  const p = project([service("caddy")], "ployz-system");
  m.add(serviceContainerSpec(p, p.services.caddy, { deploymentId: D1, slot: "1" }));
  return m;
}

Deno.test("a start-first redeploy never stops the old container and reports it as left for the retire loop", async () => {
  const m = withProxy(new FakeMachine());
  const old = seed(m, project([service("web")]), "web");
  const outcome = await run(project([service("web", { image: "img:2" })]), m);
  assert.equal(outcome.status, "succeeded");
  assert.ok(!m.calls.some((c) => c === `stop ${old}` || c === `remove ${old}`), m.calls.join("\n"));
  assert.ok(m.calls.includes(`point shop/web ${D2}`));
  assert.ok(m.calls.indexOf(`point shop/web ${D2}`) > m.calls.findIndex((c) => c.startsWith("health ")));
  assert.deepEqual(outcome.retiring.map((r) => [r.container.name, r.pointerMoved]), [[old, true]]);
  assert.match(renderOutcome(outcome), new RegExp(`Left for the retire loop \\(1\\)[^\\n]*\\n  - ${old}`));
});

Deno.test("an old container already stopped is removed, since it serves nothing", async () => {
  const m = withProxy(new FakeMachine());
  const old = seed(m, project([service("web")]), "web", "exited");
  const outcome = await run(project([service("web", { image: "img:2" })]), m);
  assert.equal(outcome.status, "succeeded");
  assert.ok(m.calls.includes(`remove ${old}`));
  assert.deepEqual(outcome.retiring, []);
});

Deno.test("a pointer that cannot be set fails the Outcome with evidence and leaves the old container serving", async () => {
  const m = withProxy(new FakeMachine());
  const old = seed(m, project([service("web")]), "web");
  m.failPointer = new DeployError("unavailable", "The store is closed");
  const outcome = await run(
    project([service("web", { image: "img:2" }), service("zz", { dependsOn: ["web"] })]),
    m,
  );
  assert.equal(outcome.status, "partial");
  assert.equal(outcome.failed?.op.kind, "point");
  assert.equal(outcome.failed?.error.code, "unavailable");
  assert.match(outcome.failed!.error.message, /Serving Pointer of "shop\/web".*The store is closed/);
  assert.equal(outcome.failed?.evidence?.pointer, "shop/web");
  assert.deepEqual(outcome.notAttempted.map((op) => `${op.kind} ${op.service}`), ["create zz", "point zz"]);
  assert.deepEqual(outcome.retiring.map((r) => [r.container.name, r.pointerMoved]), [[old, false]]);
  assert.match(renderOutcome(outcome), /Still running beside their replacement \(1\)/);
});

Deno.test("an ingress fill runs through the caller's filler, and a missing filler fails the operation", async () => {
  const seen: string[] = [];
  const m = new FakeMachine();
  const ok = await run(project([service("web")]), m, (_api, r) => {
    seen.push(`${r.machineId} ${r.deployment}`);
    return Promise.resolve({ action: "created", containerId: "caddy1", state: "running" });
  });
  assert.equal(ok.status, "succeeded");
  assert.deepEqual(seen, [`m1 ${D2}`]);

  const refused = await run(
    project([service("web")]),
    new FakeMachine(),
    (_api) => Promise.resolve({ action: "created", containerId: "caddy1", state: "exited" }),
  );
  assert.equal(refused.status, "partial");
  assert.equal(refused.failed?.op.kind, "ingress");
  assert.match(refused.failed!.error.message, /is exited after its fill/);
});
