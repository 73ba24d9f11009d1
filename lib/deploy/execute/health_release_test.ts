// A create after an earlier Service's creates starts once those passed their healthchecks, while their monitor
// period still runs; the monitor period still decides each create's own Outcome.
import assert from "node:assert/strict";
import { deployIntent } from "../plan/intent.ts";
import { planDeploy } from "../plan/plan.ts";
import { FakeMachine, project, service, snapshotOfAll } from "../plan/test_fake.ts";
import type { MachineApi, WaitHealthyAnswer } from "../plan/machine_api.ts";
import type { Op, Plan } from "../plan/types.ts";
import type { DeployEvent } from "./events.ts";
import { executePlan } from "./execute.ts";
import type { Outcome } from "./outcome.ts";
import { schedule } from "./schedule.ts";
import { sleep } from "../../util/mod.ts";

const D = "d3".padEnd(32, "0");

/**
 * A fake Machine whose containers have a healthcheck: the healthcheck passes at once, the monitor period takes
 * `monitor_ms` (short in these tests); `restartsOf` names containers found restarted by the end of it, `failMonitorOf`
 * ones that fail it.
 */
function checked(fake: FakeMachine, knobs: { restartsOf?: RegExp; failMonitorOf?: RegExp } = {}): MachineApi {
  const answer = (name: string, passed: boolean, startedAt: string): WaitHealthyAnswer => ({
    passed,
    ...(passed ? {} : { reason: "unhealthy", message: `Container "${name}" is unhealthy` }),
    evidence: {
      state: "running",
      health: passed ? "healthy" : "unhealthy",
      "exit_code": null,
      "oom_killed": false,
      "restart_count": 0,
      "started_at": startedAt,
      "last_error": null,
      "health_log": [],
    },
  });
  return new Proxy(fake, {
    get: (target, key, receiver) => {
      if (key === "ensureContainer") {
        return async (r: Parameters<MachineApi["ensureContainer"]>[0]) => {
          const made = await target.ensureContainer(r);
          return { ...made, container: { ...made.container, health: "starting" } };
        };
      }
      if (key === "waitHealthy") {
        return async (r: { id: string; "monitor_ms": number }) => {
          const name = target.containers.get(r.id)!.name;
          target.calls.push(`health ${name} ${r.monitor_ms === 0 ? "check" : "monitor"}`);
          if (r.monitor_ms === 0) return answer(name, true, "t1");
          await sleep(r.monitor_ms);
          target.calls.push(`monitored ${name}`);
          if (knobs.failMonitorOf?.test(name)) return answer(name, false, "t1");
          return answer(name, true, knobs.restartsOf?.test(name) ? "t2" : "t1");
        };
      }
      return Reflect.get(target, key, receiver);
    },
  }) as MachineApi;
}

async function chain(monitorMs: number): Promise<{ plan: Plan; fakes: FakeMachine[] }> {
  const fakes = [new FakeMachine("m1", "one"), new FakeMachine("m2", "two")];
  const p = project([
    service("db", { replicas: 2 }),
    service("api", { replicas: 2, dependsOn: ["db"] }),
    service("web", { replicas: 2, dependsOn: ["api"] }),
  ]);
  const plan = planDeploy({ intent: deployIntent(p, D), snapshot: await snapshotOfAll(fakes), monitorMs });
  return { plan, fakes };
}

function op(index: number, service: string, kind: Op["kind"]): Op {
  return { index, kind, project: "shop", service, machineId: `m${index % 2}` } as unknown as Op;
}

Deno.test("schedule(): a create waits for an earlier Service's fresh creates only to pass health, not its pointer", () => {
  const fresh = [op(0, "db", "create"), op(1, "db", "create"), op(2, "db", "point"), op(3, "api", "create")];
  const [, , point, create] = schedule(fresh);
  assert.deepEqual(point, { done: [0, 1], healthy: [] });
  assert.deepEqual(create, { done: [], healthy: [0, 1] });
  // The next Service's own pointer move still waits for all of the earlier Service, its move included.
  const [, , , , apiPoint] = schedule([...fresh, op(4, "api", "point")]);
  assert.deepEqual(apiPoint, { done: [0, 1, 2, 3], healthy: [] });
  // An earlier Service that replaces containers keeps its older Deployment serving until its pointer moves: a create
  // after it waits for all of it.
  const replaced = [
    op(0, "db", "replace"),
    op(1, "db", "create"),
    op(2, "db", "point"),
    op(3, "api", "create"),
  ];
  assert.deepEqual(schedule(replaced)[3], { done: [0, 1, 2], healthy: [] });
  // Only creates start early; an earlier Service's start waits for its creates to be done.
  assert.deepEqual(schedule([op(0, "db", "create"), op(1, "api", "start")])[1], { done: [0], healthy: [] });
});

Deno.test("a dependent Service's creates start while the Service before it runs its monitor period", async () => {
  const { plan, fakes } = await chain(150);
  const events: DeployEvent[] = [];
  // Three per Machine: with two, web's start would race db's end for a slot, and this is about health alone.
  const outcome = await executePlan(plan, new Map(fakes.map((f) => [f.id, checked(f)])), {
    onEvent: (e) => events.push(e),
    perMachine: 3,
  });
  assert.equal(outcome.status, "succeeded");
  assert.equal(outcome.completed.length, 6);
  const order = events.flatMap((e) =>
    e.type === "step" && (e.status === "completed" || (e.status === "running" && e.phase === "creating"))
      ? [`${plan.ops[e.index].service}:${e.status}`]
      : []
  );
  assert.ok(order.indexOf("api:running") < order.indexOf("db:completed"), order.join(" "));
  assert.ok(order.indexOf("web:running") < order.indexOf("api:completed"), order.join(" "));
  // Every create still waited out its whole monitor period before it completed.
  for (const f of fakes) {
    for (const s of ["db", "api", "web"]) {
      const name = f.calls.find((c) => c.startsWith(`ensure `) && c.includes(`-${s}-`))!.slice(
        "ensure ".length,
      );
      assert.ok(f.calls.includes(`monitored ${name}`), f.calls.join("\n"));
    }
  }
});

Deno.test("a create watching its monitor period does not count against the bound on its Machine", async () => {
  const fake = new FakeMachine("m1", "one");
  const plan = planDeploy({
    intent: deployIntent(project([service("web", { replicas: 4 })]), D),
    snapshot: await snapshotOfAll([fake]),
    monitorMs: 500,
  });
  const outcome = await executePlan(plan, new Map([[fake.id, checked(fake)]]), { perMachine: 1 });
  assert.equal(outcome.status, "succeeded");
  // Each next create started once the one before passed health, before any monitor period ended.
  const lastCreate = fake.calls.findLastIndex((c) => c.startsWith("ensure "));
  const firstMonitorEnd = fake.calls.findIndex((c) => c.startsWith("monitored "));
  assert.ok(lastCreate < firstMonitorEnd, fake.calls.join("\n"));
  assert.equal(fake.calls.filter((c) => c.startsWith("monitored ")).length, 4);
});

Deno.test("--parallel 1 keeps one health wait per create and the strict order", async () => {
  const { plan, fakes } = await chain(20);
  const outcome = await executePlan(plan, new Map(fakes.map((f) => [f.id, checked(f)])), { parallel: 1 });
  assert.equal(outcome.status, "succeeded");
  const waits = fakes.flatMap((f) => f.calls.filter((c) => c.startsWith("health ")));
  assert.equal(waits.length, 6);
  assert.ok(waits.every((c) => c.endsWith(" monitor")), waits.join("\n"));
});

/** Runs the chain with `knobs` on every Machine; the Deploy ends partial, failed on a create of `service`. */
async function failedOn(
  service: string,
  monitorMs: number,
  knobs: Parameters<typeof checked>[1],
): Promise<Outcome> {
  const { plan, fakes } = await chain(monitorMs);
  const outcome = await executePlan(plan, new Map(fakes.map((f) => [f.id, checked(f, knobs)])));
  assert.equal(outcome.status, "partial");
  assert.equal(outcome.failed?.op.service, service);
  assert.equal(outcome.failed?.op.kind, "create");
  return outcome;
}

Deno.test("a create failing its monitor period fails the Deploy after its dependents started", async () => {
  const outcome = await failedOn("db", 100, { failMonitorOf: /-db-/ });
  assert.match(outcome.failed!.error.message, /is unhealthy/);
  // api's creates started once db's passed health, web's once api's did; they ran to their end. Both db creates
  // failed.
  assert.deepEqual(outcome.completed.map((o) => o.service), ["api", "api", "web", "web"]);
  assert.deepEqual(outcome.alsoFailed?.map((f) => f.op.service), ["db"]);
  assert.deepEqual(outcome.notAttempted, []);
});

Deno.test("a container restarted between the healthcheck and the end of the monitor period fails its create", async () => {
  const outcome = await failedOn("web", 30, { restartsOf: /-web-/ });
  assert.match(outcome.failed!.error.message, /restarted during the health gate/);
  assert.equal(outcome.failed?.evidence?.reason, "restarted");
});
