import assert from "node:assert/strict";
import { WAIT_HEALTHY_MAX_MS } from "../../rpc/mod.ts";
import { MAX_MONITOR_MS } from "../compose/limits.ts";
import { healthGate, MAX_HEALTH_WAIT_MS } from "./health.ts";

Deno.test("healthGate() stays within the wait a Machine takes, with the longest monitor period too", () => {
  assert.equal(MAX_HEALTH_WAIT_MS, WAIT_HEALTHY_MAX_MS);
  const longest = healthGate({ kind: "disabled" }, MAX_MONITOR_MS);
  assert.ok(
    longest.deadlineMs > MAX_MONITOR_MS && longest.deadlineMs <= WAIT_HEALTHY_MAX_MS,
    JSON.stringify(longest),
  );
  // The image's own check is bounded by Docker's defaults: (30 s + 30 s) × 3 + 5 s.
  assert.equal(healthGate({ kind: "image" }, 5_000).deadlineMs, 185_000);
});
