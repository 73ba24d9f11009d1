import { deepEqual, equal } from "node:assert/strict";
import { RpcError } from "../rpc/mod.ts";
import {
  type RestartApi,
  restartOrder,
  type RestartReceipt,
  type RestartSlot,
  restartSlots,
} from "./restart.ts";
import { receiptBook } from "./deploy_test_fake.ts";

/** A Machine that records calls and answers the health gate from a script. */
function fakeMachine(name: string, log: string[], health: (id: string) => boolean | Error): RestartApi {
  const container = (id: string) =>
    ({
      container: { id, state: "running" },
    }) as unknown as Awaited<ReturnType<RestartApi["startContainer"]>>;
  return {
    stopContainer: ({ id }) => {
      log.push(`${name} stop ${id}`);
      return Promise.resolve(container(id));
    },
    startContainer: ({ id }) => {
      log.push(`${name} start ${id}`);
      return Promise.resolve(container(id));
    },
    waitHealthy: ({ id }) => {
      log.push(`${name} gate ${id}`);
      const verdict = health(id);
      if (verdict instanceof Error) return Promise.reject(verdict);
      return Promise.resolve(
        verdict ? { passed: true, via: "monitor", evidence: {} as never } : {
          passed: false,
          reason: "exited",
          message: `Container "${id}" exited with 1`,
          evidence: {} as never,
        },
      );
    },
  };
}

function slots(log: string[], health: (id: string) => boolean | Error): RestartSlot[] {
  const m = (name: string) => fakeMachine(name, log, health);
  return restartOrder([
    { machine: { id: "3", name: "m3" }, container: { id: "c3", name: "web-3", slot: "3" }, api: m("m3") },
    { machine: { id: "1", name: "m1" }, container: { id: "c1", name: "web-1", slot: "1" }, api: m("m1") },
    { machine: { id: "2", name: "m2" }, container: { id: "c10", name: "web-10", slot: "10" }, api: m("m2") },
  ]);
}

Deno.test("restart: one slot at a time, each stopped, started and gated before the next", async () => {
  const log: string[] = [];
  const seen: string[] = [];
  const steps = await restartSlots(slots(log, () => true), {
    deadlineMs: 1000,
    monitorMs: 0,
    onStep: (s) => seen.push(`${s.slot.container.slot}:${s.status}`),
  });
  deepEqual(log, [
    "m1 stop c1",
    "m1 start c1",
    "m1 gate c1",
    "m3 stop c3",
    "m3 start c3",
    "m3 gate c3",
    "m2 stop c10",
    "m2 start c10",
    "m2 gate c10",
  ]);
  deepEqual(steps.map((s) => s.status), ["restarted", "restarted", "restarted"]);
  deepEqual(seen, ["1:running", "1:restarted", "3:running", "3:restarted", "10:running", "10:restarted"]);
});

Deno.test("restart: a slot that fails its gate stops the run; the rest is named as never attempted", async () => {
  const log: string[] = [];
  const steps = await restartSlots(slots(log, (id) => id !== "c3"), { deadlineMs: 1000, monitorMs: 0 });
  deepEqual(steps.map((s) => `${s.slot.container.name}:${s.status}`), [
    "web-1:restarted",
    "web-3:failed",
    "web-10:not_attempted",
  ]);
  equal(steps[1].error?.message, 'Container "c3" exited with 1');
  equal(log.some((l) => l.includes("c10")), false, "the slot after the failure was not touched");
});

Deno.test("restart: a transport error is the failed step with its code", async () => {
  const steps = await restartSlots(
    slots([], (id) => id === "c1" ? new RpcError("unavailable", 'Cannot reach Machine "m1"') : true),
    { deadlineMs: 1000, monitorMs: 0 },
  );
  deepEqual(steps[0].error, { code: "unavailable", message: 'Cannot reach Machine "m1"' });
  deepEqual(steps.slice(1).map((s) => s.status), ["not_attempted", "not_attempted"]);
});

Deno.test("restart: each slot leaves every proxy before its stop, and the step says how", async () => {
  const log: string[] = [];
  const api: RestartApi = {
    ...fakeMachine("m1", log, () => true),
    leaveContainer: ({ id, wait_ms }) => {
      log.push(`m1 leave ${id} within ${wait_ms}`);
      return Promise.resolve({
        id,
        live: true,
        acked: ["a", "b"],
        missing: ["c"],
        "waited_ms": 7,
        "drained_ms": 40,
        "in_flight": 0,
      });
    },
  };
  const steps = await restartSlots(
    [{ machine: { id: "1", name: "m1" }, container: { id: "c1", name: "web-1", slot: "1" }, api }],
    { deadlineMs: 1_000, monitorMs: 0, leavePatienceMs: 2_000 },
  );
  deepEqual(log, ["m1 leave c1 within 2000", "m1 stop c1", "m1 start c1", "m1 gate c1"]);
  deepEqual(steps[0].left, { acked: 2, missing: ["c"], waitedMs: 7, drainedMs: 40, inFlight: 0 });
  equal(steps[0].status, "restarted");
});

Deno.test("restart: a re-run under the same receipts touches only the slots not known restarted", async () => {
  const receipts = receiptBook<RestartReceipt>();
  const book = receipts.legs;
  const first: string[] = [];
  const failing = await restartSlots(slots(first, (id) => id !== "c3"), {
    deadlineMs: 1000,
    monitorMs: 0,
    receipts,
  });
  deepEqual(failing.map((s) => s.status), ["restarted", "failed", "not_attempted"]);
  deepEqual([...book].map(([leg, r]) => `${leg}: ${r.status}`), [
    "restart web-1@m1: succeeded",
    "restart web-3@m3: failed",
  ]);
  // A leg whose answer never came (sent) is resent too: a restart ends in the same state however often it runs.
  book.set("restart web-10@m2", { status: "sent" });
  const again: string[] = [];
  const steps = await restartSlots(slots(again, () => true), { deadlineMs: 1000, monitorMs: 0, receipts });
  deepEqual(steps.map((s) => `${s.slot.container.name}:${s.status}${s.earlier ? " (earlier)" : ""}`), [
    "web-1:restarted (earlier)",
    "web-3:restarted",
    "web-10:restarted",
  ]);
  // The slot done earlier (c1) is not sent again.
  deepEqual(again, ["m3 stop c3", "m3 start c3", "m3 gate c3", "m2 stop c10", "m2 start c10", "m2 gate c10"]);
  deepEqual([...book.values()].map((r) => r.status), ["succeeded", "succeeded", "succeeded"]);
});
