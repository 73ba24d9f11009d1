// The sequence's decisions, against scripted Machines (pure logic; the real daemon path is in
// tests/upgrade_rpc_e2e_test.ts): reconnect across an outage, stop at the first non-success, reuse a pending
// request key, never continue past an unknown.
import { deepEqual, equal, ok } from "node:assert/strict";
import { type MachineClient, RpcError, type UpgradeAttemptWire } from "../rpc/mod.ts";
import { commandKey, runUpgradeSequence, type UpgradeReceipt, type UpgradeTarget } from "./upgrade_flow.ts";
import { receiptBook } from "./deploy_test_fake.ts";

const CAPS = ["ployz.machine.upgrade.v1", "ployz.machine.upgrade_status.v1"];

function lost(): RpcError {
  return new RpcError("unavailable", "Cannot reach the Machine RPC socket", { details: { socket: "/s" } });
}

interface Script {
  name: string;
  /** Outcome after `polls` status reads. */
  outcome: "succeeded" | "failed";
  polls: number;
  /** Status reads (by index) that fail as if the daemon were restarting. */
  outages?: number[];
  /** Never reaches a terminal outcome. */
  stuck?: boolean;
}

function machine(script: Script, log: string[]): UpgradeTarget {
  let version = "0.1.0";
  let reads = 0;
  const keys = new Map<string, string>();
  const attempt = (id: string, key: string): UpgradeAttemptWire => ({
    id,
    "request_key": key,
    "target_version": "0.2.0",
    stage: "accepted",
    "journal_hint": `journalctl -u ployz-upgrade-${id}`,
    "started_at": "2026-01-01T00:00:00.000Z",
    "updated_at": "2026-01-01T00:00:00.000Z",
  });
  let current: UpgradeAttemptWire | undefined;
  return {
    label: script.name,
    connect(): MachineClient {
      log.push(`connect ${script.name}`);
      const client = {
        describeContract: () =>
          Promise.resolve({
            "machine_id": `id-${script.name}`,
            "machine_name": script.name,
            "protocol_major": 1,
            "daemon_version": version,
            capabilities: CAPS,
          }),
        requireCapability: () => Promise.resolve(),
        upgradeMachine: (req: { request_key: string }) => {
          log.push(`request ${script.name} ${req.request_key}`);
          const existing = keys.has(req.request_key);
          if (!existing) {
            keys.set(req.request_key, `a${keys.size}${script.name}`);
            current = attempt(keys.get(req.request_key)!, req.request_key);
          }
          return Promise.resolve({ attempt: current!, existing });
        },
        upgradeStatus: () => {
          const n = reads++;
          if (script.outages?.includes(n)) return Promise.reject(lost());
          if (!script.stuck && n + 1 >= script.polls) {
            current = { ...current!, stage: "done", outcome: script.outcome };
            if (script.outcome === "succeeded") {
              version = "0.2.0";
              current = {
                ...current,
                "ready_at": "2026-01-01T00:00:07.000Z",
                ready: {
                  "daemon_version": "0.2.0",
                  "machine_id": `id-${script.name}`,
                  via: "describe_contract",
                  "observed_at": "2026-01-01T00:00:07.000Z",
                },
              };
            } else current = { ...current, stage: "verify_ready", error: "no answer" };
          } else current = { ...current!, stage: "restart" };
          return Promise.resolve({ attempt: current });
        },
        close: () => {},
        [Symbol.dispose]: () => {},
      };
      return client as unknown as MachineClient;
    },
  };
}

Deno.test("the sequence follows an attempt across an outage, then stops at the first failure", async () => {
  const log: string[] = [];
  const receipts = receiptBook<UpgradeReceipt>();
  const result = await runUpgradeSequence({
    version: "0.2.0",
    targets: [
      machine({ name: "m1", outcome: "succeeded", polls: 5, outages: [1, 2] }, log),
      machine({ name: "m2", outcome: "failed", polls: 2 }, log),
      machine({ name: "m3", outcome: "succeeded", polls: 1 }, log),
    ],
    receipts,
    timeoutMs: 30_000,
    pollMs: 1,
    mintKey: () => "k",
  });
  equal(result.ok, false);
  deepEqual(result.machines.map((m) => m.result), ["succeeded", "failed", "not_attempted"]);
  const [m1, m2] = result.machines;
  equal(m1.observed_version, "0.2.0");
  equal(m1.request_to_ready_ms, 7000);
  ok((m1.management_unreachable_ms ?? 0) > 0, "the outage was measured");
  equal(log.filter((l) => l === "connect m1").length, 3, "reconnected after each lost read");
  equal(m2.stage, "verify_ready");
  equal(m2.error, "no answer");
  ok(!log.some((l) => l.includes("m3")), "m3 was never contacted");
  deepEqual(receipts.legs.get("m1"), {
    "request_key": "k",
    "attempt_id": "a0m1",
    finished: true,
    result: "succeeded",
  });
});

Deno.test("a pending receipt's key is reused; a finished one is not; an unknown stops the sequence", async () => {
  const log: string[] = [];
  const receipts = receiptBook<UpgradeReceipt>();
  receipts.save("m1", { "request_key": "old", finished: false });
  receipts.save("m2", { "request_key": "done-key", finished: true, result: "succeeded" });
  const result = await runUpgradeSequence({
    version: "0.2.0",
    targets: [
      machine({ name: "m1", outcome: "succeeded", polls: 1 }, log),
      machine({ name: "m2", outcome: "succeeded", polls: 1, stuck: true }, log),
      machine({ name: "m3", outcome: "succeeded", polls: 1 }, log),
    ],
    receipts,
    timeoutMs: 300,
    pollMs: 20,
    mintKey: () => "fresh",
  });
  ok(log.includes("request m1 old"));
  ok(log.includes("request m2 fresh"));
  deepEqual(result.machines.map((m) => m.result), ["succeeded", "unknown", "not_attempted"]);
  equal(receipts.legs.get("m2")?.finished, false, "an unknown keeps the key for the next run");
  equal(receipts.legs.get("m2")?.request_key, "fresh");
});

Deno.test("the receipts' key names the command's target", () => {
  equal(commandKey({ version: "0.2.0" }), "machine-upgrade version=0.2.0");
  equal(commandKey({ channel: "stable" }), "machine-upgrade channel=stable");
  equal(commandKey({}), "machine-upgrade channel=default");
});
