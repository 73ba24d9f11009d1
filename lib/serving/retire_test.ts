import assert from "node:assert/strict";
import type { Ack, Container } from "../store/mod.ts";
import { retireAfterMsFromEnv, retireDecision, type RetireInput } from "./retire.ts";

function row(id: string, machine: string, deployment: string, state = "running"): Container {
  return { id, "machine_id": machine, project: "p", service: "web", deployment, name: id, image: "i", state };
}
const pointer = { project: "p", service: "web", deployment: "B", version: 2 };
function ack(machine: string, deployment = "B", version = 2): Ack {
  return { "machine_id": machine, pointer: "p/web", deployment, version };
}
function input(over: Partial<RetireInput>): RetireInput {
  return {
    machineId: "m1",
    nowMs: 1_000,
    containers: [row("a1", "m1", "A"), row("b1", "m1", "B"), row("a2", "m2", "A")],
    pointers: [pointer],
    acks: [],
    machines: ["m1", "m2", "m3"],
    down: new Set(),
    firstSeen: new Map(),
    retireAfterMs: 300_000,
    ...over,
  };
}

Deno.test("retires own superseded containers once every Machine not Down acked", () => {
  const d = retireDecision(input({ acks: [ack("m1"), ack("m2"), ack("m3")] }));
  assert.deepEqual(d.retire.map((r) => [r.containerId, r.reason]), [["a1", "acked"]]);
  assert.deepEqual(d.waiting, []);
});

Deno.test("waits for missing acks; an ack of an older pointer version does not count", () => {
  const d = retireDecision(input({ acks: [ack("m1"), ack("m2", "B", 1)] }));
  assert.deepEqual(d.retire, []);
  assert.deepEqual(d.waiting[0].missing, ["m2", "m3"]);
});

Deno.test("a Down Machine's ack is not awaited", () => {
  const d = retireDecision(input({ acks: [ack("m1"), ack("m2")], down: new Set(["m3"]) }));
  assert.deepEqual(d.retire.map((r) => r.reason), ["acked"]);
});

Deno.test("the bound: retires after retireAfterMs from first sight, and a restart starts it again", () => {
  const firstSeen = new Map<string, number>();
  assert.deepEqual(retireDecision(input({ firstSeen, nowMs: 1_000 })).retire, []);
  assert.equal(firstSeen.get("a1"), 1_000);
  assert.deepEqual(retireDecision(input({ firstSeen, nowMs: 300_999 })).retire, []);
  const due = retireDecision(input({ firstSeen, nowMs: 301_000 }));
  assert.deepEqual(due.retire.map((r) => [r.containerId, r.reason]), [["a1", "bound"]]);
  // A restarted daemon has no first-seen times: it waits the bound again, never loses the container.
  assert.deepEqual(retireDecision(input({ firstSeen: new Map(), nowMs: 301_000 })).retire, []);
});

Deno.test("never touches other Machines' containers, stopped ones, hooks, or Services without a pointer", () => {
  const containers = [
    row("a2", "m2", "A"),
    row("stopped", "m1", "A", "exited"),
    { ...row("hook", "m1", "A"), slot: "hook" },
    { ...row("other", "m1", "A"), service: "api" },
  ];
  const d = retireDecision(input({ containers, acks: [ack("m1"), ack("m2"), ack("m3")] }));
  assert.deepEqual(d.retire, []);
  assert.deepEqual(d.waiting, []);
});

Deno.test("forgets first-seen times once a container is no longer superseded", () => {
  const firstSeen = new Map([["gone", 5]]);
  retireDecision(input({ firstSeen }));
  assert.deepEqual([...firstSeen.keys()], ["a1"]);
});

Deno.test("PLOYZ_RETIRE_AFTER_SECONDS configures the bound", () => {
  assert.equal(retireAfterMsFromEnv(() => "2"), 2_000);
  assert.equal(retireAfterMsFromEnv(() => undefined), 300_000);
  assert.equal(retireAfterMsFromEnv(() => "soon"), 300_000);
});

Deno.test("a newer Deploy's containers, not pointed at yet, are never retired by the pointer", () => {
  const listed = { ...pointer, superseded: ["A"] };
  const d = retireDecision(input({
    containers: [row("a1", "m1", "A"), row("b1", "m1", "B"), row("c1", "m1", "C")],
    pointers: [listed],
    acks: [ack("m1"), ack("m2"), ack("m3")],
    nowMs: 10_000_000,
  }));
  assert.deepEqual(d.retire.map((r) => r.containerId), ["a1"]);
  assert.deepEqual(d.waiting, []);
});
