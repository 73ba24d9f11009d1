// Leaving the proxies before a client stop, pure: which leave acks a Machine writes and which it deletes.
import { deepEqual } from "node:assert/strict";
import type { Ack, Container } from "../store/mod.ts";
import { leaveAcksToWrite, staleLeaveAcks } from "./leaving.ts";

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
