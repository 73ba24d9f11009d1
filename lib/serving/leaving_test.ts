// Leaving the proxies before a client stop, pure: which leave acks a Machine writes and which it deletes.
import { deepEqual } from "node:assert/strict";
import type { Ack, Container } from "../store/mod.ts";
import { heldLeaving, LEAVE_HOLD_MS, leaveAcksToWrite, staleLeaveAcks } from "./leaving.ts";
import { servable } from "./serving_set.ts";

function row(id: string, fields: Partial<Container> = {}): Container {
  return {
    id,
    "machine_id": "m2",
    name: id,
    project: "p",
    service: "s",
    image: "i",
    state: "running",
    ...fields,
  };
}

const ack = (machine: string, id: string): Ack => ({
  "machine_id": machine,
  pointer: `leave:${id}`,
  deployment: id,
});

Deno.test("a Machine acks each live marked container once, whoever owns it", () => {
  const rows = [row("a", { stopping: "t" }), row("b"), row("c", { stopping: "t", state: "exited" })];
  deepEqual(leaveAcksToWrite("m1", rows, [], new Date(0)).map((a) => [a.pointer, a.deployment]), [[
    "leave:a",
    "a",
  ]]);
  deepEqual(leaveAcksToWrite("m1", rows, [ack("m1", "a")], new Date(0)), []);
  deepEqual(
    leaveAcksToWrite("m1", rows, [ack("m2", "a")], new Date(0)).length,
    1,
    "another Machine's ack is not its own",
  );
});

Deno.test("a Machine deletes its own leave acks of containers gone or no longer marked, and nothing else", () => {
  const rows = [row("a", { stopping: "t" }), row("b")];
  const acks = [ack("m1", "a"), ack("m1", "b"), ack("m1", "gone"), ack("m2", "gone"), {
    "machine_id": "m1",
    pointer: "p/s",
    deployment: "d",
  }];
  deepEqual(staleLeaveAcks("m1", rows, acks), ["m1/leave:b", "m1/leave:gone"]);
});

Deno.test("the last serving container of a Service is held while another is on its way, within the bound", () => {
  const old = row("old", { stopping: "t", health: "healthy", addresses: ["10.0.0.2"] });
  const fresh = row("new", { health: "starting", addresses: ["10.0.0.3"] });
  const firstSeen = new Map<string, number>();
  const input = { containers: [old, fresh], pointers: [], stopping: new Set<string>(), firstSeen };
  deepEqual([...heldLeaving({ ...input, nowMs: 1_000 })], ["old"]);
  deepEqual(firstSeen.get("old"), 1_000, "the bound runs from the first sight of the mark");
  deepEqual([...heldLeaving({ ...input, nowMs: 1_000 + LEAVE_HOLD_MS - 1 })], ["old"]);
  deepEqual([...heldLeaving({ ...input, nowMs: 1_000 + LEAVE_HOLD_MS })], [], "never past the bound");
  // Once the new one is healthy here, it serves and the old one leaves at once.
  const healthy = { ...fresh, health: "healthy" };
  deepEqual([...heldLeaving({ ...input, containers: [old, healthy], nowMs: 1_500 })], []);
  deepEqual(
    leaveAcksToWrite("m1", [old, fresh], [], new Date(0), new Set(["old"])),
    [],
    "a held container is not acked",
  );
});

Deno.test("nothing is held when another container serves, none is on its way, or this Machine retires it", () => {
  const old = row("old", { stopping: "t", health: "healthy", addresses: ["10.0.0.2"] });
  const other = row("other", { health: "healthy", addresses: ["10.0.0.4"] });
  const fresh = row("new", { health: "starting", addresses: ["10.0.0.3"] });
  const base = { pointers: [], stopping: new Set<string>(), firstSeen: new Map<string, number>(), nowMs: 0 };
  deepEqual([...heldLeaving({ ...base, containers: [old, other, fresh] })], [], "another one serves");
  deepEqual([...heldLeaving({ ...base, containers: [old] })], [], "a stop-first single replica: none coming");
  deepEqual(
    [...heldLeaving({ ...base, containers: [old, { ...fresh, health: "unhealthy" }] })],
    [],
    "an unhealthy one is not on its way",
  );
  deepEqual(
    [...heldLeaving({ ...base, containers: [old, fresh], stopping: new Set(["old"]) })],
    [],
    "retired or removed here",
  );
  deepEqual(
    [...heldLeaving({ ...base, containers: [old, { ...fresh, service: "other" }] })],
    [],
    "another Service's start is not its replacement",
  );
});

Deno.test("a held container still serves in the projections; unheld, a marked one does not", () => {
  const old = row("old", { stopping: "t", health: "healthy", addresses: ["10.0.0.2"] });
  deepEqual(servable(old), false);
  deepEqual(servable(old, { holding: new Set(["old"]) }), true);
  deepEqual(servable(old, { holding: new Set(["old"]), stopping: new Set(["old"]) }), false);
});
