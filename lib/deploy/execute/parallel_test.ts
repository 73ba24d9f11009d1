// Parallel execution on fake Machines: independent operations overlap, the orders the plan means hold, and the
// Outcome says exactly what completed, failed, ended unknown and was never attempted.
import assert from "node:assert/strict";
import { deployIntent } from "../plan/intent.ts";
import { planDeploy } from "../plan/plan.ts";
import { FakeMachine, project, service, snapshotOfAll } from "../plan/test_fake.ts";
import type { MachineApi } from "../plan/machine_api.ts";
import type { Op, Plan } from "../plan/types.ts";
import type { NormalizedProject } from "../compose/types.ts";
import { RpcLikeError } from "./parallel_test_support.ts";
import type { DeployEvent } from "./events.ts";
import { DEFAULT_PARALLEL, executePlan } from "./execute.ts";
import { dependencies } from "./schedule.ts";
import { renderOutcome } from "./render.ts";
import { sleep } from "../../util/mod.ts";

const D = "d2".padEnd(32, "0");

/** Wraps a fake Machine so each container create takes `ms`, counting creates in flight across all wrappers. */
class Slow {
  static inFlight = 0;
  static peak = 0;
  /** When set, every call on this Machine fails as a request sent with no answer. */
  cut = false;
  constructor(readonly fake: FakeMachine, readonly ms: number) {}
  api(): MachineApi {
    const fake = this.fake;
    return new Proxy(fake, {
      get: (target, key, receiver) => {
        const value = Reflect.get(target, key, receiver);
        if (typeof value !== "function") return value;
        return async (...args: unknown[]) => {
          if (this.cut) {
            await sleep(this.ms);
            throw new RpcLikeError();
          }
          if (key !== "ensureContainer") return await value.apply(target, args);
          Slow.inFlight++;
          Slow.peak = Math.max(Slow.peak, Slow.inFlight);
          try {
            await sleep(this.ms);
            return await value.apply(target, args);
          } finally {
            Slow.inFlight--;
          }
        };
      },
    }) as MachineApi;
  }
}

async function lab3(p: NormalizedProject): Promise<{ plan: Plan; slow: Slow[] }> {
  const fakes = [new FakeMachine("m1", "one"), new FakeMachine("m2", "two"), new FakeMachine("m3", "three")];
  const plan = planDeploy({ intent: deployIntent(p, D), snapshot: await snapshotOfAll(fakes) });
  return { plan, slow: fakes.map((f) => new Slow(f, 40)) };
}

function machinesOf(slow: Slow[]): Map<string, MachineApi> {
  return new Map(slow.map((s) => [s.fake.id, s.api()]));
}

const threeByThree = (): NormalizedProject =>
  project([
    service("db", { replicas: 3 }),
    service("api", { replicas: 3, dependsOn: ["db"] }),
    service("web", { replicas: 3, dependsOn: ["api"] }),
  ]);

Deno.test("dependencies(): Services wait for what they depend on; replacements roll one at a time", async () => {
  const { plan } = await lab3(threeByThree());
  assert.deepEqual(plan.dependsOn, { db: [], api: ["db"], web: ["api"] });
  const deps = dependencies(plan.ops, { project: plan.project, dependsOn: plan.dependsOn! });
  const kinds = plan.ops.map((op) => `${op.service}:${op.kind}`);
  assert.deepEqual(kinds, [
    ...Array(3).fill("db:create"),
    ...Array(3).fill("api:create"),
    ...Array(3).fill("web:create"),
  ]);
  assert.deepEqual(deps.slice(0, 3), [[], [], []]);
  for (const i of [3, 4, 5]) assert.deepEqual(deps[i], [0, 1, 2]);
  // web depends on db through api.
  for (const i of [6, 7, 8]) assert.deepEqual(deps[i], [0, 1, 2, 3, 4, 5]);
  // Without the graph, each Service waits for every Service before it.
  assert.deepEqual(dependencies(plan.ops)[6], [0, 1, 2, 3, 4, 5]);
  const replaceOps = plan.ops.map((op, i) => ({ ...op, kind: "replace" as const, index: i }));
  const rolled = dependencies(replaceOps as unknown as Plan["ops"]);
  assert.deepEqual(rolled[1], [0]);
  assert.deepEqual(rolled[4], [0, 1, 2, 3]);
});

Deno.test("dependencies(): update_config.parallelism lets that many replacements run at once", async () => {
  const { plan } = await lab3(project([service("web", { replicas: 5 })]));
  const replacing = (parallelism?: number) =>
    plan.ops.map((op) => ({
      ...op,
      kind: "replace" as const,
      ...(parallelism === undefined ? {} : { parallelism }),
    }));
  // Each waits for the one `parallelism` places before it: at most that many in flight.
  assert.deepEqual(dependencies(replacing(2) as unknown as Plan["ops"]), [[], [], [0], [1], [2]]);
  assert.deepEqual(dependencies(replacing(3) as unknown as Plan["ops"]), [[], [], [], [0], [1]]);
  assert.deepEqual(dependencies(replacing(0) as unknown as Plan["ops"]), [[], [], [], [], []]);
  assert.deepEqual(dependencies(replacing(1) as unknown as Plan["ops"]), [[], [0], [1], [2], [3]]);
  assert.deepEqual(dependencies(replacing() as unknown as Plan["ops"]), [[], [0], [1], [2], [3]]);
});

Deno.test("dependencies(): Services with no depends_on path between them wait for nothing of each other", async () => {
  const { plan } = await lab3(project([
    service("a", { replicas: 3 }),
    service("b", { replicas: 3 }),
    service("c", { replicas: 3, dependsOn: ["a"] }),
  ]));
  const graph = { project: plan.project, dependsOn: plan.dependsOn! };
  const deps = dependencies(plan.ops, graph);
  assert.deepEqual(plan.ops.map((op) => op.service).join(""), "aaabbbccc");
  assert.deepEqual(deps.slice(0, 6), [[], [], [], [], [], []]);
  for (const i of [6, 7, 8]) assert.deepEqual(deps[i], [0, 1, 2]);
  // What is not one of the Project's Services (here the Ingress Proxy fill) waits for all before it.
  const fill = {
    ...plan.ops[0],
    index: 9,
    kind: "ingress",
    project: "ployz",
    service: "ingress",
  } as unknown as Op;
  assert.deepEqual(dependencies([...plan.ops, fill], graph)[9], [0, 1, 2, 3, 4, 5, 6, 7, 8]);
});

Deno.test("independent Services' creates run side by side, up to the bound on each Machine", async () => {
  const { plan, slow } = await lab3(project([
    service("a", { replicas: 3 }),
    service("b", { replicas: 3 }),
    service("c", { replicas: 3 }),
  ]));
  Slow.peak = 0;
  const outcome = await executePlan(plan, machinesOf(slow), { parallel: 9, perMachine: 2 });
  assert.equal(outcome.status, "succeeded");
  assert.equal(outcome.completed.length, 9);
  assert.equal(Slow.peak, 6, "two creates at once on each of the three Machines");
});

Deno.test("parallel execution runs a Service's replicas on three Machines at once and keeps Service order", async () => {
  const { plan, slow } = await lab3(threeByThree());
  Slow.peak = 0;
  const events: DeployEvent[] = [];
  const outcome = await executePlan(plan, machinesOf(slow), { parallel: 8, onEvent: (e) => events.push(e) });
  assert.equal(outcome.status, "succeeded");
  assert.equal(outcome.completed.length, 9);
  assert.equal(Slow.peak, 3, "three creates at once: one per Machine, never a later Service's");
  // Every api create started after every db create completed.
  const order = events.flatMap((e) =>
    e.type === "step" && (e.status === "completed" || (e.status === "running" && e.phase === "creating"))
      ? [`${plan.ops[e.index].service}:${e.status}`]
      : []
  );
  const lastDb = order.lastIndexOf("db:completed");
  const firstApi = order.indexOf("api:running");
  assert.ok(lastDb < firstApi, order.join(" "));

  const { plan: again, slow: slow1 } = await lab3(threeByThree());
  Slow.peak = 0;
  const sequential = await executePlan(again, machinesOf(slow1), { parallel: 1 });
  assert.equal(sequential.status, "succeeded");
  assert.equal(Slow.peak, 1, "--parallel 1 runs one operation at a time");
});

Deno.test("a Service's replacements run update_config.parallelism at a time across Machines", async () => {
  const fakes = [new FakeMachine("m1", "one"), new FakeMachine("m2", "two"), new FakeMachine("m3", "three")];
  const web = (image: string, parallelism: number | null) =>
    project([service("web", { replicas: 6, image, update: { order: null, monitorMs: null, parallelism } })]);
  const deploy = async (p: NormalizedProject, id: string): Promise<{ plan: Plan; peak: number }> => {
    const plan = planDeploy({
      intent: deployIntent(p, id.padEnd(32, "0")),
      snapshot: await snapshotOfAll(fakes),
    });
    Slow.peak = 0;
    const outcome = await executePlan(plan, machinesOf(fakes.map((f) => new Slow(f, 40))), { perMachine: 3 });
    assert.equal(outcome.status, "succeeded", JSON.stringify(outcome.failed));
    return { plan, peak: Slow.peak };
  };
  await deploy(web("img:1", null), "d3");
  for (const [image, parallelism, peak] of [["img:2", null, 1], ["img:3", 2, 2], ["img:4", 0, 6]] as const) {
    const { plan, peak: seen } = await deploy(web(image, parallelism), `d${image.at(-1)}a`);
    assert.deepEqual(plan.ops.filter((op) => op.kind === "replace").length, 6);
    assert.equal(seen, peak, `parallelism ${parallelism}: ${peak} replacement(s) in flight at most`);
  }
});

/** Three fake Machines running `before` (deployed on them), and the plan that deploys `after` there. */
async function redeployPlan(
  before: NormalizedProject,
  after: NormalizedProject,
): Promise<{ fakes: FakeMachine[]; plan: Plan }> {
  const fakes = [new FakeMachine("m1", "one"), new FakeMachine("m2", "two"), new FakeMachine("m3", "three")];
  const first = planDeploy({ intent: deployIntent(before, D), snapshot: await snapshotOfAll(fakes) });
  assert.equal((await executePlan(first, machinesOf(fakes.map((f) => new Slow(f, 0))))).status, "succeeded");
  const plan = planDeploy({
    intent: deployIntent(after, "d5".padEnd(32, "0")),
    snapshot: await snapshotOfAll(fakes),
  });
  return { fakes, plan };
}

Deno.test("a replacement with update_config.delay starts that long after the one before it", async () => {
  const web = (image: string, delayMs: number | null) =>
    project([service("web", { replicas: 3, image, update: { order: null, monitorMs: null, delayMs } })]);
  const { fakes, plan } = await redeployPlan(web("img:1", null), web("img:2", 150));
  const started = new Map<number, number>();
  const ended = new Map<number, number>();
  const outcome = await executePlan(plan, machinesOf(fakes.map((f) => new Slow(f, 20))), {
    onEvent: (e) => {
      if (e.type !== "step") return;
      if (e.status === "running" && !started.has(e.index)) started.set(e.index, Date.now());
      if (e.status === "completed") ended.set(e.index, Date.now());
    },
  });
  assert.equal(outcome.status, "succeeded");
  const replaces = plan.ops.filter((op) => op.kind === "replace").map((op) => op.index);
  assert.equal(replaces.length, 3);
  for (const [before, after] of [[replaces[0], replaces[1]], [replaces[1], replaces[2]]]) {
    const gap = started.get(after)! - ended.get(before)!;
    assert.ok(gap >= 140, `replacement ${after} started ${gap} ms after ${before} ended, not 150`);
  }
});

Deno.test("under --parallel 1 a replacement's delay holds back everything after it in the plan", async () => {
  const both = (image: string, delayMs: number | null) =>
    project([
      service("a", { replicas: 3, image, update: { order: null, monitorMs: null, delayMs } }),
      service("b", { replicas: 1, image }),
    ]);
  const { fakes, plan } = await redeployPlan(both("img:1", null), both("img:2", 100));
  const order: number[] = [];
  const outcome = await executePlan(plan, machinesOf(fakes.map((f) => new Slow(f, 0))), {
    parallel: 1,
    onEvent: (e) => {
      if (e.type === "step" && e.status === "running" && !order.includes(e.index)) order.push(e.index);
    },
  });
  assert.equal(outcome.status, "succeeded");
  assert.deepEqual(order, plan.ops.map((op) => op.index));
});

Deno.test("by default (no parallel given) different Machines' operations overlap", async () => {
  const { plan, slow } = await lab3(threeByThree());
  Slow.peak = 0;
  const outcome = await executePlan(plan, machinesOf(slow));
  assert.equal(outcome.status, "succeeded");
  assert.equal(outcome.completed.length, 9);
  assert.ok(DEFAULT_PARALLEL > 1);
  assert.equal(Slow.peak, 3, "one create per Machine at once by default");
});

Deno.test("perMachine bounds the operations on one Machine", async () => {
  const fake = new FakeMachine("m1", "one");
  const plan = planDeploy({
    intent: deployIntent(project([service("web", { replicas: 5 })]), D),
    snapshot: await snapshotOfAll([fake]),
  });
  const slow = new Slow(fake, 30);
  Slow.peak = 0;
  const outcome = await executePlan(plan, new Map([[fake.id, slow.api()]]), { parallel: 8, perMachine: 2 });
  assert.equal(outcome.status, "succeeded");
  assert.equal(Slow.peak, 2);
});

Deno.test("a Machine cut mid-Deploy: the others finish, its operation is unknown, the rest not attempted", async () => {
  const { plan, slow } = await lab3(threeByThree());
  slow[2].cut = true;
  const outcome = await executePlan(plan, machinesOf(slow), { parallel: 8 });
  assert.equal(outcome.status, "partial");
  assert.deepEqual(outcome.completed.map((op) => `${op.service}@${op.machineName}`), ["db@one", "db@two"]);
  assert.equal(outcome.failed?.op.machineName, "three");
  assert.equal(outcome.failed?.outcomeUnknown, true);
  assert.equal(outcome.alsoFailed, undefined);
  assert.deepEqual(outcome.notAttempted.map((op) => op.service), [
    ...Array(3).fill("api"),
    ...Array(3).fill("web"),
  ]);
  assert.match(
    renderOutcome(outcome),
    /Outcome unknown \(the request was sent and no answer came; it may have acted\)/,
  );
});

Deno.test("a Machine that answers with an error fails its operation; one that never connected too", async () => {
  const { plan, slow } = await lab3(project([service("db", { replicas: 3 })]));
  slow[1].fake.failEnsure = /./;
  const machines = machinesOf(slow);
  machines.delete("m3");
  const outcome = await executePlan(plan, machines, { parallel: 8 });
  assert.equal(outcome.status, "partial");
  assert.deepEqual(outcome.completed.map((op) => op.machineName), ["one"]);
  assert.deepEqual(
    [outcome.failed, ...(outcome.alsoFailed ?? [])].map((
      f,
    ) => [f?.op.machineName, f?.outcomeUnknown ?? false]),
    [["two", false], ["three", false]],
  );
});

Deno.test("a call that never gets an answer ends at its bound as an unknown outcome; the others finish", async () => {
  const { plan, slow } = await lab3(project([service("db", { replicas: 3 })]));
  const machines = machinesOf(slow);
  const m3 = machines.get("m3")!;
  // m3 takes the create and never answers, until the caller gives up.
  machines.set("m3", {
    ...m3,
    status: () => m3.status(),
    listContainers: (r) => m3.listContainers(r),
    ensureContainer: (_r, options?: { signal?: AbortSignal }) =>
      new Promise((_, reject) =>
        options?.signal?.addEventListener("abort", () => reject(options.signal!.reason))
      ),
  } as MachineApi);
  const started = performance.now();
  const outcome = await executePlan(plan, machines, { parallel: 8, callTimeoutMs: 200 });
  assert.ok(performance.now() - started < 5_000);
  assert.deepEqual(outcome.completed.map((op) => op.machineName).sort(), ["one", "two"]);
  assert.equal(outcome.failed?.op.machineName, "three");
  assert.equal(outcome.failed?.outcomeUnknown, true);
  assert.match(outcome.failed!.error.message, /took the request and sent no answer: no answer within 200 ms/);
});
