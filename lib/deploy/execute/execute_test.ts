import assert from "node:assert/strict";
import { deployIntent } from "../plan/intent.ts";
import { planDeploy } from "../plan/plan.ts";
import { serviceContainerSpec } from "../plan/container_spec.ts";
import { FakeMachine, HOST_8080, project, service, snapshotOf } from "../plan/test_fake.ts";
import type { NormalizedProject } from "../compose/types.ts";
import type { DeployEvent } from "./events.ts";
import { executePlan } from "./execute.ts";
import { outcomeJson } from "./outcome.ts";
import { CodedError } from "../../util/mod.ts";

const D1 = "d1".padEnd(32, "0");
const D2 = "d2".padEnd(32, "0");

async function run(p: NormalizedProject, m: FakeMachine, events: DeployEvent[] = []) {
  const plan = planDeploy({ intent: deployIntent(p, D2), snapshot: await snapshotOf(m) });
  return await executePlan(plan, new Map([[m.id, m]]), { onEvent: (e) => events.push(e), hookPollMs: 1 });
}

function seed(m: FakeMachine, p: NormalizedProject, name: string): string {
  return m.add(serviceContainerSpec(p, p.services[name], { deploymentId: D1, slot: "1" })).name;
}

Deno.test("executePlan runs every operation in order and succeeds", async () => {
  const m = new FakeMachine();
  const events: DeployEvent[] = [];
  const outcome = await run(project([service("web", { replicas: 2 })]), m, events);
  assert.equal(outcome.status, "succeeded");
  assert.equal(outcome.completed.length, 2);
  assert.deepEqual(outcome.notAttempted, []);
  assert.equal(m.containers.size, 2);
  assert.equal(events[0].type, "plan");
  assert.equal(events.at(-1)?.type, "outcome");
});

Deno.test("executePlan reports the completed prefix, the failure and the unexecuted suffix", async () => {
  const m = new FakeMachine();
  m.failEnsure = /-b-1-/;
  // A chain, so what comes after the failure waits for it (independent Services would run side by side).
  const p = project([service("a"), service("b", { dependsOn: ["a"] }), service("c", { dependsOn: ["b"] })]);
  const outcome = await run(p, m);
  assert.equal(outcome.status, "partial");
  assert.deepEqual(outcome.completed.map((op) => op.service), ["a"]);
  assert.equal(outcome.failed?.op.service, "b");
  assert.equal(outcome.failed?.error.code, "conflict");
  assert.deepEqual(outcome.notAttempted.map((op) => op.service), ["c"]);
  assert.deepEqual(outcome.compensation, []);
  const json = outcomeJson(outcome);
  assert.equal((json.failed as { op: { kind: string } }).op.kind, "create");
  assert.ok(Array.isArray(json.not_attempted));
});

Deno.test("executePlan fails without compensation when the first operation fails", async () => {
  const m = new FakeMachine();
  m.failEnsure = /./;
  const outcome = await run(project([service("a")]), m);
  assert.equal(outcome.status, "failed");
  assert.deepEqual(outcome.completed, []);
});

Deno.test("a start-first replacement that fails health stops the new container and keeps the old one", async () => {
  const m = new FakeMachine();
  const old = seed(m, project([service("web")]), "web");
  m.healthy = (c) => c.name === old;
  const outcome = await run(project([service("web", { image: "img:2" })]), m);
  assert.equal(outcome.status, "failed");
  assert.deepEqual(outcome.compensation.map((s) => [s.action, s.ok]), [["stop_new", true]]);
  const byName = new Map([...m.containers.values()].map((c) => [c.name, c.state]));
  assert.equal(byName.get(old), "running");
  assert.equal(byName.size, 2, "the failed new container is kept as evidence");
  assert.ok(!m.calls.includes(`stop ${old}`));
});

Deno.test("a stop-first replacement that fails health stops the new container and restarts the old one", async () => {
  const ports = [HOST_8080];
  const m = new FakeMachine();
  const old = seed(m, project([service("web", { ports })]), "web");
  m.healthy = (c) => c.name === old;
  const outcome = await run(project([service("web", { ports, image: "img:2" })]), m);
  assert.equal(outcome.status, "failed");
  assert.deepEqual(outcome.compensation.map((s) => [s.action, s.ok]), [["stop_new", true], [
    "restart_old",
    true,
  ]]);
  const stopOld = m.calls.indexOf(`stop ${old}`);
  const startOld = m.calls.indexOf(`start ${old}`);
  assert.ok(stopOld >= 0 && startOld > stopOld);
  // The old container is reported back only after its own healthcheck passed again.
  assert.ok(m.calls.indexOf(`health ${old}`) > startOld, m.calls.join("\n"));
  assert.equal([...m.containers.values()].find((c) => c.name === old)?.state, "running");
});

Deno.test("a restarted old container that fails its healthcheck is a failed restart_old, saying why", async () => {
  const ports = [HOST_8080];
  const m = new FakeMachine();
  const old = seed(m, project([service("web", { ports })]), "web");
  m.healthy = () => false;
  const outcome = await run(project([service("web", { ports, image: "img:2" })]), m);
  assert.equal(outcome.status, "failed");
  const restart = outcome.compensation.find((s) => s.action === "restart_old");
  assert.equal(restart?.ok, false);
  assert.equal(restart?.error?.code, "unavailable");
  assert.match(restart?.error?.message ?? "", new RegExp(`Container "${old}" is unhealthy`));
});

Deno.test("a successful replacement removes the old container", async () => {
  const m = new FakeMachine();
  const old = seed(m, project([service("web")]), "web");
  const outcome = await run(project([service("web", { image: "img:2" })]), m);
  assert.equal(outcome.status, "succeeded");
  assert.ok(m.calls.includes(`remove ${old}`));
  assert.equal(m.containers.size, 1);
});

Deno.test("a failed hook keeps its container as evidence and stops the Deploy before its Service", async () => {
  const hook = { command: ["sh", "-c", "exit 3"], environment: {}, privileged: null, timeoutMs: 10_000 };
  const m = new FakeMachine();
  m.hookExit = 3;
  const outcome = await run(project([service("api", { preDeploy: hook })]), m);
  assert.equal(outcome.status, "failed");
  assert.equal(outcome.failed?.op.kind, "hook");
  assert.match(outcome.failed!.error.message, /exited with code 3/);
  // Its output reached the Observe Store a line at a time: the executor waited until two reads agreed.
  assert.equal(outcome.failed?.evidence?.logs, "running migration 7\nmigration failed\n");
  assert.deepEqual(outcome.notAttempted.map((op) => op.kind), ["create"]);
  const kept = [...m.containers.values()].filter((c) => c.slot === "hook");
  assert.equal(kept.length, 1);
  assert.equal(kept[0].exit_code, 3);
});

Deno.test("a failed hook whose Machine cannot read its output still fails the Deploy, saying why", async () => {
  const hook = { command: ["sh", "-c", "exit 3"], environment: {}, privileged: null, timeoutMs: 10_000 };
  const m = new FakeMachine();
  m.hookExit = 3;
  m.logHistory = () => Promise.reject(new CodedError("unavailable", "the Observe Store is not running"));
  const outcome = await run(project([service("api", { preDeploy: hook })]), m);
  assert.equal(outcome.status, "failed");
  assert.match(outcome.failed!.error.message, /exited with code 3/);
  assert.equal(outcome.failed?.evidence?.logs, "(logs unavailable: the Observe Store is not running)");
});

Deno.test("a passing hook lets its Service deploy", async () => {
  const hook = { command: ["true"], environment: {}, privileged: null, timeoutMs: 10_000 };
  const m = new FakeMachine();
  const outcome = await run(project([service("api", { preDeploy: hook })]), m);
  assert.equal(outcome.status, "succeeded");
  assert.deepEqual(outcome.completed.map((op) => op.kind), ["hook", "create"]);
});

Deno.test("re-running a plan under the same Deployment finds its containers and creates no second ones", async () => {
  const m = new FakeMachine();
  const p = project([service("web", { replicas: 3 })]);
  const plan = planDeploy({ intent: deployIntent(p, D2), snapshot: await snapshotOf(m) });
  // A first run that got through one operation before being killed.
  await executePlan({ ...plan, ops: plan.ops.slice(0, 1) }, new Map([[m.id, m]]));
  const again = await executePlan(plan, new Map([[m.id, m]]));
  assert.equal(again.status, "succeeded");
  assert.equal(m.containers.size, 3);
});

Deno.test("with no monitor period and no healthcheck, the create's own answer passes the gate; otherwise it is asked", async () => {
  const quick = new FakeMachine();
  const p = project([service("web", { replicas: 1 })]);
  const plan = planDeploy({ intent: deployIntent(p, D2), snapshot: await snapshotOf(quick), monitorMs: 0 });
  assert.equal((await executePlan(plan, new Map([[quick.id, quick]]))).status, "succeeded");
  assert.deepEqual(
    quick.calls.filter((c) => c.startsWith("health")),
    [],
    "running, no healthcheck: no second ask",
  );

  const checked = new FakeMachine();
  const ensure = checked.ensureContainer.bind(checked);
  // The container has a healthcheck (still starting when the create answers): the gate waits on the Machine.
  checked.ensureContainer = async (r) => {
    const answer = await ensure(r);
    return { ...answer, container: { ...answer.container, health: "starting" } };
  };
  const again = planDeploy({
    intent: deployIntent(p, D2),
    snapshot: await snapshotOf(checked),
    monitorMs: 0,
  });
  assert.equal((await executePlan(again, new Map([[checked.id, checked]]))).status, "succeeded");
  assert.equal(checked.calls.filter((c) => c.startsWith("health")).length, 1);

  const monitored = new FakeMachine();
  assert.equal((await run(p, monitored)).status, "succeeded");
  assert.equal(monitored.calls.filter((c) => c.startsWith("health")).length, 1, "a monitor period is waited");
});
