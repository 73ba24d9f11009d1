import { deepEqual, equal } from "node:assert/strict";
import { listMachines } from "./membership.ts";

const KEY_B = "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA=";
const KEY_C = "CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCA=";

Deno.test("listMachines judges each peer from the observer's own evidence and names the observer", () => {
  const now = Date.parse("2026-01-01T00:10:00Z");
  const answer = listMachines({
    self: { id: "a", name: "m1" },
    rows: [
      { id: "c", name: "m3", subnet: "10.210.2.0/24", public_key: KEY_C },
      { id: "a", name: "m1", subnet: "10.210.0.0/24", endpoints: ["192.0.2.11:51820"] },
      { id: "b", name: "m2", subnet: "10.210.1.0/24", public_key: KEY_B },
      { id: "d", name: "m4" },
    ],
    evidence: {
      handshakes: new Map([[KEY_B, now - 5_000], [KEY_C, now - 200_000]]),
      traffic: new Map([["c", now - 60_000]]),
      received: new Map([[KEY_C, now - 100_000]]),
      refused: new Map([["b", 3]]),
    },
    thresholds: { handshakeUpMs: 185_000, storeUpMs: 30_000, downAfterMs: 275_000 },
    now,
  });
  deepEqual(answer.observer, { machine_id: "a", machine_name: "m1" });
  equal(answer.observed_at, "2026-01-01T00:10:00.000Z");
  deepEqual(answer.machines.map((m) => [m.name, m.membership]), [
    ["m1", "up"],
    ["m2", "up"],
    ["m3", "suspect"],
    ["m4", "unknown"],
  ]);
  equal(answer.machines[0].self, true);
  equal(answer.machines[2].last_store_traffic_at, "2026-01-01T00:09:00.000Z");
  equal(answer.machines[2].last_received_at, "2026-01-01T00:08:20.000Z");
  // Refusals are counted per delivering Machine; the observer has none of its own.
  deepEqual(answer.machines.map((m) => m.refused_changes), [undefined, 3, 0, 0]);
  equal(answer.mesh_error, undefined);
});
