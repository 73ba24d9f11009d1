import assert from "node:assert/strict";
import { deployIntent, serviceOrder } from "./intent.ts";
import { creationKey } from "./keys.ts";
import { planDeploy } from "./plan.ts";
import { describeOp } from "./preview.ts";
import { serviceContainerSpec } from "./container_spec.ts";
import { FakeMachine, HOST_8080, project, service, snapshotOf } from "./test_fake.ts";
import type { NormalizedHealthcheck, NormalizedProject } from "../compose/types.ts";
import { MAX_HEALTH_WAIT_MS } from "./health.ts";
import type { CreateOp, Op, ReplaceOp } from "./types.ts";

const D1 = "d1".padEnd(32, "0");
const D2 = "d2".padEnd(32, "0");

async function plan(p: NormalizedProject, m: FakeMachine, previous?: NormalizedProject, id = D2) {
  return planDeploy({ intent: deployIntent(p, id), snapshot: await snapshotOf(m), previous });
}

function deployed(m: FakeMachine, p: NormalizedProject, name: string, slots: number, id = D1): void {
  for (let n = 1; n <= slots; n++) {
    m.add(serviceContainerSpec(p, p.services[name], { deploymentId: id, slot: String(n) }));
  }
}

function kinds(ops: Op[]): string[] {
  return ops.map((op) => `${op.kind} ${op.service}/${op.slot}`);
}

Deno.test("planDeploy creates every slot of a new Service on the one Machine", async () => {
  const p = project([service("web", { replicas: 3 })]);
  const result = await plan(p, new FakeMachine());
  assert.deepEqual(kinds(result.ops), ["create web/1", "create web/2", "create web/3"]);
  assert.ok(result.ops.every((op) => op.machineId === "m1"));
  assert.deepEqual(result.ops.map((op) => op.index), [0, 1, 2]);
});

Deno.test("planDeploy finds nothing to do when every slot is UpToDate", async () => {
  const p = project([service("web", { replicas: 3 })]);
  const m = new FakeMachine();
  deployed(m, p, "web", 3);
  const result = await plan(p, m);
  assert.deepEqual(result.ops, []);
  assert.equal(result.services[0].upToDate, 3);
});

Deno.test("planDeploy replaces a slot whose spec changed and names the changed field", async () => {
  const before = project([service("web")]);
  const m = new FakeMachine();
  deployed(m, before, "web", 1);
  const after = project([service("web", { image: "img:2" })]);
  const result = await plan(after, m, before);
  assert.deepEqual(kinds(result.ops), ["replace web/1"]);
  const op = result.ops[0] as ReplaceOp;
  assert.equal(op.change, "NeedsRecreate");
  assert.deepEqual(op.changed, ["image"]);
  assert.equal(op.order, "start-first");
});

Deno.test("planDeploy leaves a container UpToDate when only the replica count changed", async () => {
  const before = project([service("web", { replicas: 1 })]);
  const m = new FakeMachine();
  deployed(m, before, "web", 1);
  const result = await plan(project([service("web", { replicas: 2 })]), m, before);
  assert.deepEqual(kinds(result.ops), ["create web/2"]);
});

Deno.test("planDeploy scales down by removing the highest slots", async () => {
  const p = project([service("web", { replicas: 3 })]);
  const m = new FakeMachine();
  deployed(m, p, "web", 3);
  const result = await plan(project([service("web", { replicas: 1 })]), m);
  assert.deepEqual(kinds(result.ops), ["remove web/2", "remove web/3"]);
  assert.ok(result.ops.every((op) => op.kind === "remove" && op.reason === "scale_down"));
});

Deno.test("planDeploy starts a stopped UpToDate container instead of replacing it", async () => {
  const p = project([service("web")]);
  const m = new FakeMachine();
  m.add(serviceContainerSpec(p, p.services.web, { deploymentId: D1, slot: "1" }), "exited");
  assert.deepEqual(kinds((await plan(p, m)).ops), ["start web/1"]);
});

Deno.test("planDeploy picks stop-first for host ports and named volumes, start-first otherwise", async () => {
  const cases: [Partial<Parameters<typeof service>[1]>, string][] = [
    [{}, "start-first"],
    [
      { ports: [HOST_8080] },
      "stop-first",
    ],
    [{
      mounts: [{
        type: "volume",
        source: "data",
        target: "/d",
        readOnly: false,
        noCopy: false,
        subpath: null,
      }],
    }, "stop-first"],
  ];
  for (const [fields, order] of cases) {
    const m = new FakeMachine();
    deployed(m, project([service("web", fields)]), "web", 1);
    const result = await plan(project([service("web", { ...fields, image: "img:2" })]), m);
    assert.equal((result.ops[0] as ReplaceOp).order, order, JSON.stringify(fields));
  }
});

Deno.test("planDeploy lets an explicit update_config.order win over host ports", async () => {
  const ports = [HOST_8080];
  const m = new FakeMachine();
  deployed(m, project([service("web", { ports })]), "web", 1);
  const next = service("web", { ports, image: "img:2", update: { order: "start-first", monitorMs: null } });
  const op = (await plan(project([next]), m)).ops[0] as ReplaceOp;
  assert.equal(op.order, "start-first");
  assert.equal(op.orderReason, "update_config.order");
});

Deno.test("planDeploy carries update_config.parallelism; stop-first says how many go down", async () => {
  const m = new FakeMachine();
  deployed(m, project([service("web", { replicas: 5 })]), "web", 5);
  const next = (parallelism: number | null) =>
    service("web", {
      replicas: 5,
      image: "img:2",
      update: { order: "stop-first", monitorMs: null, parallelism },
    });
  const two = await plan(project([next(2)]), m);
  assert.deepEqual(two.ops.map((op) => (op as ReplaceOp).parallelism), [2, 2, 2, 2, 2]);
  assert.deepEqual(two.ops.map((op) => (op as ReplaceOp).order), Array(5).fill("stop-first"));
  assert.match(
    describeOp(two.ops[0]),
    /, stop-first \(update_config\.order\), 2 at a time \(update_config\.parallelism\)/,
  );
  assert.ok(
    two.warnings.includes(
      'Service "shop/web" is replaced stop-first 2 at a time (update_config.parallelism): ' +
        "up to 2 of its containers are down at once",
    ),
    two.warnings.join("\n"),
  );
  const paused = await plan(
    project([
      service("web", {
        replicas: 5,
        image: "img:2",
        update: { order: null, monitorMs: null, delayMs: 2000 },
      }),
    ]),
    m,
  );
  // The first rolls after none: only the others wait.
  assert.deepEqual(paused.ops.map((op) => (op as ReplaceOp).delayMs), [undefined, 2000, 2000, 2000, 2000]);
  assert.match(describeOp(paused.ops[1]), /, waiting 2 s after the one before it \(update_config\.delay\)/);
  assert.doesNotMatch(describeOp(paused.ops[0]), /waiting/);
  const all = await plan(project([next(0)]), m);
  assert.match(describeOp(all.ops[0]), /, all at once \(update_config\.parallelism\)/);
  assert.ok(
    all.warnings.some((w) => w.includes("stop-first all at once") && w.includes("up to 5")),
    all.warnings.join("\n"),
  );
  // Unset, or 1: one after another, as before (no field on the operation, no warning).
  for (const parallelism of [null, 1]) {
    const one = await plan(project([next(parallelism)]), m);
    assert.ok(one.ops.every((op) => !("parallelism" in op)));
    assert.doesNotMatch(describeOp(one.ops[0]), /at a time|waiting/);
    assert.ok(one.ops.every((op) => !("delayMs" in op)));
    assert.ok(!one.warnings.some((w) => w.includes("parallelism")), one.warnings.join("\n"));
  }
});

Deno.test("planDeploy caps the health gate at a Machine's bound and says so", async () => {
  const healthcheck = (intervalMs: number): NormalizedHealthcheck => ({
    kind: "configured",
    test: ["CMD", "true"],
    intervalMs,
    timeoutMs: null,
    startPeriodMs: null,
    startIntervalMs: null,
    retries: 3,
  });
  // (25m + 30 s) × 3 + 5 s: more than the hour a Machine lets a health gate wait.
  const long = await plan(
    project([service("web", { healthcheck: healthcheck(1_500_000) })]),
    new FakeMachine(),
  );
  assert.equal((long.ops[0] as CreateOp).health?.deadlineMs, MAX_HEALTH_WAIT_MS);
  assert.ok(
    long.warnings.includes(
      'Service "shop/web": its healthcheck allows a new container 1h16m35s to pass (start_period + ' +
        "(interval + timeout) × retries); the health gate waits at most 1h, then counts it failed",
    ),
    long.warnings.join("\n"),
  );
  const short = await plan(
    project([service("web", { healthcheck: healthcheck(10_000) })]),
    new FakeMachine(),
  );
  assert.equal((short.ops[0] as CreateOp).health?.deadlineMs, 125_000);
  assert.ok(!short.warnings.some((w) => w.includes("health gate")), short.warnings.join("\n"));
});

Deno.test("planDeploy orders Services by depends_on and refuses a cycle", async () => {
  const p = project([
    service("api", { dependsOn: ["db"] }),
    service("web", { dependsOn: ["api"] }),
    service("db"),
  ]);
  assert.deepEqual(serviceOrder(p), ["db", "api", "web"]);
  assert.deepEqual(kinds((await plan(p, new FakeMachine())).ops), [
    "create db/1",
    "create api/1",
    "create web/1",
  ]);
  const cyclic = project([service("a", { dependsOn: ["b"] }), service("b", { dependsOn: ["a"] })]);
  assert.throws(() => serviceOrder(cyclic), /cycle a -> b -> a/);
});

Deno.test("planDeploy runs a Service's hook before its containers change, and only then", async () => {
  const hook = { command: ["sh", "-c", "migrate"], environment: {}, privileged: null, timeoutMs: 1000 };
  const p = project([service("db"), service("api", { dependsOn: ["db"], preDeploy: hook })]);
  const m = new FakeMachine();
  const first = await plan(p, m);
  assert.deepEqual(kinds(first.ops), ["create db/1", "hook api/hook", "create api/1"]);
  deployed(m, p, "db", 1);
  deployed(m, p, "api", 1);
  assert.deepEqual((await plan(p, m)).ops, []);
});

Deno.test("creation keys are deterministic per Deployment, Service and slot", async () => {
  assert.equal(creationKey(D1, "web", "1"), creationKey(D1, "web", "1"));
  assert.notEqual(creationKey(D1, "web", "1"), creationKey(D1, "web", "2"));
  assert.notEqual(creationKey(D1, "web", "1"), creationKey(D2, "web", "1"));
  const p = project([service("web", { replicas: 2 })]);
  const a = await plan(p, new FakeMachine(), undefined, D1);
  const b = await plan(p, new FakeMachine(), undefined, D1);
  assert.deepEqual(a.ops, b.ops);
});

Deno.test("planDeploy keeps a half-finished replacement's new container and removes the old one", async () => {
  const before = project([service("web")]);
  const after = project([service("web", { image: "img:2" })]);
  const m = new FakeMachine();
  deployed(m, before, "web", 1, D1);
  const fresh = m.add(serviceContainerSpec(after, after.services.web, { deploymentId: D2, slot: "1" }));
  const result = await plan(after, m, before, "d3".padEnd(32, "0"));
  assert.deepEqual(kinds(result.ops), ["replace web/1"]);
  const op = result.ops[0] as ReplaceOp;
  assert.equal(op.spec.creationKey, fresh.creation_key);
  assert.equal(op.spec.name, fresh.name);
});

Deno.test("planDeploy removes obsolete Services and reports Data Loss for their volumes", async () => {
  const mount = {
    type: "volume" as const,
    source: "data",
    target: "/d",
    readOnly: false,
    noCopy: false,
    subpath: null,
  };
  const before = project([service("web"), service("db", { mounts: [mount] })]);
  const m = new FakeMachine();
  deployed(m, before, "web", 1);
  deployed(m, before, "db", 1);
  const result = await plan(project([service("web")]), m, before);
  assert.deepEqual(kinds(result.ops), ["remove db/1"]);
  assert.deepEqual(result.dataLoss.map((d) => d.name), ["shop/db"]);
});

Deno.test("planDeploy refuses an image present nowhere, naming it and the Machine", async () => {
  const p = project([service("web", { image: "img:missing" })]);
  await assert.rejects(
    () => plan(p, new FakeMachine()),
    /Image "img:missing" is on no observed Machine: Service "shop\/web" needs it on Machine "one"/,
  );
});

Deno.test("planDeploy does not remove obsolete Services when a Machine was not observed", async () => {
  const before = project([service("web"), service("old")]);
  const m = new FakeMachine();
  deployed(m, before, "old", 1);
  const snapshot = await snapshotOf(m);
  snapshot.failures.push({
    machineId: "m2",
    machineName: "two",
    error: { code: "unavailable", message: "down" },
  });
  const result = planDeploy({
    intent: deployIntent(project([service("web")]), D2),
    snapshot,
    previous: before,
  });
  assert.deepEqual(kinds(result.ops), ["create web/1"]);
  assert.ok(result.warnings.some((w) => w.includes('Machine "two" was not observed')));
  assert.ok(result.warnings.some((w) => w.includes("the Snapshot is incomplete")));
});

Deno.test("planDeploy with no Machine observed says why each one was not", () => {
  assert.throws(
    () =>
      planDeploy({
        intent: deployIntent(project([service("web")]), D2),
        snapshot: {
          project: "shop",
          observedAt: new Date().toISOString(),
          machines: [],
          failures: [{
            machineId: "m1",
            machineName: "one",
            error: { code: "unavailable", message: 'Cannot reach Docker at "/run/docker.sock"' },
          }],
          omissions: [],
        },
      }),
    /No observed Machine can run containers: "one" was not observed \(Cannot reach Docker at "\/run\/docker\.sock"\)$/,
  );
});
