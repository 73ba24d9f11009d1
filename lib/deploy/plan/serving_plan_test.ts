import assert from "node:assert/strict";
import { deployIntent } from "./intent.ts";
import { planDeploy } from "./plan.ts";
import { serviceContainerSpec } from "./container_spec.ts";
import { FakeMachine, HOST_8080, project, service, snapshotOf } from "./test_fake.ts";
import type { NormalizedProject, NormalizedService } from "../compose/types.ts";
import type { IngressOp, Op, PointOp, ReplaceOp } from "./types.ts";
import { SERVING_LABELS } from "../compose/serving_labels.ts";

const D1 = "d1".padEnd(32, "0");
const D2 = "d2".padEnd(32, "0");
const D3 = "d3".padEnd(32, "0");
const INGRESS = { project: "ployz-system", service: "caddy" };

async function plan(p: NormalizedProject, m: FakeMachine, id = D2) {
  return planDeploy({
    intent: deployIntent(p, id),
    snapshot: await snapshotOf(m, p.name, INGRESS),
    serving: { ingress: INGRESS },
  });
}

function deployed(m: FakeMachine, p: NormalizedProject, name: string, slots: number, id = D1): void {
  for (let n = 1; n <= slots; n++) {
    m.add(serviceContainerSpec(p, p.services[name], { deploymentId: id, slot: String(n) }));
  }
}

function proxy(m: FakeMachine, state: string): void {
  const p = project([service("caddy")], "ployz-system");
  m.add(serviceContainerSpec(p, p.services.caddy, { deploymentId: D1, slot: "1" }), state);
}

function kinds(ops: Op[]): string[] {
  return ops.map((op) => `${op.kind} ${op.service}/${op.slot}`);
}

const HOST = [HOST_8080];

Deno.test("a start-first replacement leaves the old container to the retire loop and moves the pointer after it", async () => {
  const m = new FakeMachine();
  proxy(m, "running");
  deployed(m, project([service("web", { replicas: 2 })]), "web", 2);
  const result = await plan(project([service("web", { replicas: 2, image: "img:2" })]), m);
  assert.deepEqual(kinds(result.ops), ["replace web/1", "replace web/2", "point web/"]);
  for (const op of result.ops.slice(0, 2) as ReplaceOp[]) {
    assert.equal(op.oldStop, "retire_loop");
    assert.equal(op.spec.deployment, D2);
  }
  assert.equal((result.ops[2] as PointOp).deployment, D2);
});

Deno.test("a stop-first replacement still stops its old container itself and moves the pointer", async () => {
  const m = new FakeMachine();
  proxy(m, "running");
  deployed(m, project([service("web", { ports: HOST })]), "web", 1);
  const result = await plan(project([service("web", { ports: HOST, image: "img:2" })]), m);
  assert.deepEqual(kinds(result.ops), ["replace web/1", "point web/"]);
  assert.equal((result.ops[0] as ReplaceOp).order, "stop-first");
  assert.equal((result.ops[0] as ReplaceOp).oldStop, "client");
});

Deno.test("new containers beside kept ones join the kept Deployment, so the retire loop never stops those", async () => {
  const m = new FakeMachine();
  proxy(m, "running");
  deployed(m, project([service("web", { replicas: 1 })]), "web", 1);
  const result = await plan(project([service("web", { replicas: 3 })]), m);
  assert.deepEqual(kinds(result.ops), ["create web/2", "create web/3", "point web/"]);
  for (const op of result.ops.slice(0, 2)) {
    assert.equal(op.kind === "create" && op.spec.deployment, D1);
    // The creation key still belongs to this Deploy, so a re-run finds them.
    assert.ok(op.kind === "create" && op.spec.name.endsWith(D2.slice(0, 8)));
  }
  assert.equal((result.ops[2] as PointOp).deployment, D1);
});

Deno.test("kept containers of several Deployments keep the pointer and the client stops what it replaces", async () => {
  const m = new FakeMachine();
  proxy(m, "running");
  const before = project([service("web", { replicas: 3 })]);
  const s = before.services.web;
  m.add(serviceContainerSpec(before, s, { deploymentId: D1, slot: "1" }));
  m.add(serviceContainerSpec(before, s, { deploymentId: D3, slot: "2" }));
  m.add(serviceContainerSpec(before, { ...s, image: "img:2" } as NormalizedService, {
    deploymentId: D1,
    slot: "3",
  }));
  const result = await plan(before, m);
  assert.deepEqual(kinds(result.ops), ["replace web/3"]);
  assert.equal((result.ops[0] as ReplaceOp).oldStop, "client");
  assert.ok(
    result.warnings.some((w) => /several Deployments.*not moved/.test(w)),
    result.warnings.join("\n"),
  );
});

Deno.test("nothing changes and nothing is pointed when every slot is UpToDate", async () => {
  const m = new FakeMachine();
  proxy(m, "running");
  const p = project([service("web")]);
  deployed(m, p, "web", 1);
  assert.deepEqual((await plan(p, m)).ops, []);
});

Deno.test("a Deploy fills a missing or stopped Ingress Proxy slot last, and only where ingress is accepted", async () => {
  const p = project([service("web")]);
  const empty = new FakeMachine();
  const filled = await plan(p, empty);
  assert.deepEqual(kinds(filled.ops), ["create web/1", "point web/", "ingress caddy/1"]);
  assert.equal((filled.ops[2] as IngressOp).action, "create");

  const stopped = new FakeMachine();
  proxy(stopped, "exited");
  deployed(stopped, p, "web", 1);
  const started = await plan(p, stopped);
  assert.deepEqual(kinds(started.ops), ["ingress caddy/1"]);
  assert.equal((started.ops[0] as IngressOp).action, "start");

  const refusing = new FakeMachine();
  refusing.acceptsIngress = false;
  assert.deepEqual(kinds((await plan(p, refusing)).ops), ["create web/1", "point web/"]);
});

Deno.test("ingress x-ports and x-caddy ride as container labels and are no longer warned about", async () => {
  const m = new FakeMachine();
  proxy(m, "running");
  const web = service("web", {
    ports: [{
      kind: "ingress",
      hostname: "app.test",
      loadBalancerPort: 80,
      containerPort: 8080,
      protocol: "http",
    }],
    caddy: "http://x.test {\n\trespond ok\n}\n",
  });
  const result = await plan(project([web]), m);
  const op = result.ops[0];
  assert.ok(op.kind === "create");
  assert.deepEqual(JSON.parse(op.spec.labels![SERVING_LABELS.ingress]), [
    { hostname: "app.test", "lb_port": 80, "container_port": 8080, protocol: "http" },
  ]);
  assert.match(op.spec.labels![SERVING_LABELS.caddy], /respond ok/);
  assert.ok(!result.warnings.some((w) => /x-ports|x-caddy/.test(w)), result.warnings.join("\n"));
});

Deno.test("a Machine without the Ingress Proxy image keeps its slot empty, with a warning", async () => {
  const m = new FakeMachine();
  const result = planDeploy({
    intent: deployIntent(project([service("web")]), D2),
    snapshot: await snapshotOf(m, "shop", INGRESS),
    serving: { ingress: { ...INGRESS, image: "img:missing" } },
  });
  assert.deepEqual(kinds(result.ops), ["create web/1", "point web/"]);
  assert.ok(
    result.warnings.some((w) =>
      /image "img:missing" is on no observed Machine: the ingress slot of "one" stays empty/.test(w)
    ),
  );
});

Deno.test("a stopped old container beside its UpToDate replacement is removed, not replaced again", async () => {
  const m = new FakeMachine();
  proxy(m, "running");
  const before = project([service("web")]);
  const after = project([service("web", { image: "img:2" })]);
  m.add(serviceContainerSpec(before, before.services.web, { deploymentId: D1, slot: "1" }), "exited");
  m.add(serviceContainerSpec(after, after.services.web, { deploymentId: D3, slot: "1" }));
  const result = await plan(after, m);
  assert.deepEqual(kinds(result.ops), ["remove web/1"]);
  assert.equal(result.ops[0].kind === "remove" && result.ops[0].reason, "superseded");
});
