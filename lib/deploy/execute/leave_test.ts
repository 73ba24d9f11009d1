// Proxy first (docs/bets.md, bet 9): every stop a Deploy makes (scale-down, stop-first replacement, a removal op)
// first asks the container's Machine to take it out of every proxy, waits for the acks with bounded patience, and
// the Outcome says how each one left.
import assert from "node:assert/strict";
import { deployIntent } from "../plan/intent.ts";
import { planDeploy } from "../plan/plan.ts";
import { serviceContainerSpec } from "../plan/container_spec.ts";
import { FakeMachine, project, service, snapshotOf } from "../plan/test_fake.ts";
import type { NormalizedProject } from "../compose/types.ts";
import { CodedError } from "../../util/mod.ts";
import { executePlan } from "./execute.ts";
import { renderOutcome } from "./render.ts";

const D1 = "d1".padEnd(32, "0");
const D2 = "d2".padEnd(32, "0");

/** A Machine that answers the leave route: acked by `acked`, missing `missing`, or refusing with `refuse`. */
class LeavingMachine extends FakeMachine {
  acked = ["m1", "m2", "m3"];
  missing: string[] = [];
  refuse: Error | undefined;
  drain: { "drained_ms": number; "in_flight": number } | undefined;
  leaveContainer(r: { id: string; "wait_ms": number }) {
    this.calls.push(`leave ${this.containers.get(r.id)?.name} within ${r.wait_ms}`);
    if (this.refuse !== undefined) return Promise.reject(this.refuse);
    const live = this.containers.get(r.id)?.state === "running";
    return Promise.resolve({
      id: r.id,
      live,
      acked: this.acked,
      missing: this.missing,
      "waited_ms": 12,
      ...this.drain,
    });
  }
}

async function run(p: NormalizedProject, m: FakeMachine) {
  const plan = planDeploy({ intent: deployIntent(p, D2), snapshot: await snapshotOf(m) });
  return await executePlan(plan, new Map([[m.id, m]]), { hookPollMs: 1, leavePatienceMs: 5_000 });
}

function seed(m: FakeMachine, p: NormalizedProject, slot: string): string {
  return m.add(serviceContainerSpec(p, p.services.web, { deploymentId: D1, slot })).name;
}

Deno.test("a scale-down leaves every proxy before the stop, and the Outcome says so", async () => {
  const m = new LeavingMachine();
  const two = project([service("web", { replicas: 2 })]);
  seed(m, two, "1");
  const second = seed(m, two, "2");
  const outcome = await run(project([service("web", { replicas: 1 })]), m);
  assert.equal(outcome.status, "succeeded");
  const leave = m.calls.indexOf(`leave ${second} within 5000`);
  assert.ok(leave >= 0 && m.calls.indexOf(`stop ${second}`) > leave, m.calls.join("\n"));
  assert.deepEqual(outcome.left?.map((l) => [l.container.name, l.acked.length, l.missing]), [[
    second,
    3,
    [],
  ]]);
  assert.match(
    renderOutcome(outcome),
    /Left every proxy before stopping \(1\):\n {2}- .* acked by 3 Machines in 12 ms/,
  );
});

Deno.test("a stop-first replacement leaves the old container first; missing acks are named, the stop goes on", async () => {
  const ports = [{
    kind: "host" as const,
    hostIp: null,
    publishedPort: 8080,
    containerPort: 80,
    protocol: "tcp" as const,
  }];
  const m = new LeavingMachine();
  m.missing = ["m3"];
  const old = seed(m, project([service("web", { ports })]), "1");
  const outcome = await run(project([service("web", { ports, image: "img:2" })]), m);
  assert.equal(outcome.status, "succeeded");
  const leave = m.calls.findIndex((c) => c.startsWith(`leave ${old}`));
  assert.ok(leave >= 0 && m.calls.indexOf(`stop ${old}`) > leave, m.calls.join("\n"));
  assert.match(renderOutcome(outcome), /stopped after 12 ms without the ack of 1 Machine \(m3\)/);
});

Deno.test("a Machine without the leave route is named in the Outcome; other leave errors fail the step", async () => {
  const m = new LeavingMachine();
  const two = project([service("web", { replicas: 2 })]);
  seed(m, two, "1");
  const second = seed(m, two, "2");
  m.refuse = new CodedError("unsupported", "Machine does not serve ployz.container.leave.v1");
  const outcome = await run(project([service("web", { replicas: 1 })]), m);
  assert.equal(outcome.status, "succeeded");
  assert.equal(outcome.left?.[0].skipped, "Machine does not serve ployz.container.leave.v1");
  assert.ok(m.calls.includes(`stop ${second}`));

  const n = new LeavingMachine();
  seed(n, two, "1");
  const other = seed(n, two, "2");
  n.refuse = new CodedError("unavailable", "Docker is not answering");
  const failed = await run(project([service("web", { replicas: 1 })]), n);
  assert.equal(failed.status, "failed");
  assert.ok(!n.calls.includes(`stop ${other}`), "never stopped without leaving");
});

Deno.test("the Outcome says how long the Machine drained before the stop, or how many connections the stop cut", async () => {
  const two = project([service("web", { replicas: 2 })]);
  const drained = new LeavingMachine();
  drained.drain = { "drained_ms": 1_840, "in_flight": 0 };
  seed(drained, two, "1");
  seed(drained, two, "2");
  const a = await run(project([service("web", { replicas: 1 })]), drained);
  assert.deepEqual(a.left?.map((l) => [l.drainedMs, l.inFlight]), [[1_840, 0]]);
  assert.match(renderOutcome(a), /acked by 3 Machines in 12 ms; drained in 1840 ms/);

  const cut = new LeavingMachine();
  cut.drain = { "drained_ms": 5_000, "in_flight": 2 };
  seed(cut, two, "1");
  seed(cut, two, "2");
  const b = await run(project([service("web", { replicas: 1 })]), cut);
  assert.match(
    renderOutcome(b),
    /acked by 3 Machines in 12 ms; stopped with 2 connections still open after 5000 ms/,
  );

  // An older Machine answers without drain figures: the Outcome claims none.
  const old = new LeavingMachine();
  seed(old, two, "1");
  seed(old, two, "2");
  const c = await run(project([service("web", { replicas: 1 })]), old);
  assert.equal(c.left?.[0].drainedMs, undefined);
  assert.doesNotMatch(renderOutcome(c), /drained|still open/);
});
