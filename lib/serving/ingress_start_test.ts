import { ingressRescanMsFromEnv } from "./ingress_driver.ts";
import assert from "node:assert/strict";
import {
  type IngressHolds,
  type IngressRecord,
  type IngressScan,
  ingressStartDecision,
  type ScannedContainer,
} from "./ingress_start.ts";

function proxy(id: string, over: Partial<ScannedContainer> = {}): ScannedContainer {
  return {
    id,
    project: "ployz-system",
    service: "caddy",
    state: "created",
    createdAt: "2026-01-01T00:00:01Z",
    lastError: "driver failed programming external connectivity: port 80 already in use",
    ...over,
  };
}

const record: IngressRecord = { phase: "participating" };
const noHolds: IngressHolds = { held: new Set(), stopping: new Set() };
function scan(containers: ScannedContainer[], over: Partial<IngressScan> = {}): IngressScan {
  return { complete: true, containers, createdSinceStart: false, ...over };
}

Deno.test("starts the newest local Ingress Proxy whose last start failed", () => {
  const older = proxy("old", { createdAt: "2026-01-01T00:00:00Z" });
  assert.deepEqual(ingressStartDecision(scan([older, proxy("new")]), record, noHolds), {
    action: "start",
    containerId: "new",
  });
  assert.deepEqual(ingressStartDecision(scan([proxy("x", { state: "exited" })]), record, noHolds), {
    action: "start",
    containerId: "x",
  });
});

Deno.test("only while the Machine participates and its record accepts ingress", () => {
  assert.equal(
    ingressStartDecision(scan([proxy("p")]), { phase: "joining" }, noHolds).action === "none" &&
      (ingressStartDecision(scan([proxy("p")]), { phase: "joining" }, noHolds) as { reason: string }).reason,
    "not_participating",
  );
  assert.deepEqual(ingressStartDecision(scan([proxy("p")]), { ...record, acceptsIngress: false }, noHolds), {
    action: "none",
    reason: "ingress_not_accepted",
  });
  assert.equal(
    ingressStartDecision(scan([proxy("p")]), { ...record, acceptsIngress: true }, noHolds).action,
    "start",
  );
});

Deno.test("only after a scan that inspected every local container and saw no creation since it began", () => {
  assert.deepEqual(ingressStartDecision(scan([proxy("p")], { complete: false }), record, noHolds), {
    action: "none",
    reason: "incomplete_scan",
  });
  assert.deepEqual(ingressStartDecision(scan([proxy("p")], { createdSinceStart: true }), record, noHolds), {
    action: "none",
    reason: "created_since_scan",
  });
});

Deno.test("nothing when no local Ingress Proxy exists (it never creates one)", () => {
  const other = { ...proxy("app"), project: "shop", service: "web" };
  assert.deepEqual(ingressStartDecision(scan([other]), record, noHolds), {
    action: "none",
    reason: "no_ingress_proxy",
  });
});

Deno.test("nothing while another local one is running or restarting", () => {
  for (const state of ["running", "restarting"]) {
    const live = proxy("live", { state, lastError: null, createdAt: "2026-01-01T00:00:00Z" });
    assert.deepEqual(ingressStartDecision(scan([live, proxy("new")]), record, noHolds), {
      action: "none",
      reason: "one_running",
      containerId: "live",
    });
  }
});

Deno.test("nothing when Docker recorded no failed start (a stopped proxy stays stopped)", () => {
  for (const p of [proxy("p", { state: "exited", lastError: null }), proxy("p", { lastError: "  " })]) {
    assert.deepEqual(ingressStartDecision(scan([p]), record, noHolds), {
      action: "none",
      reason: "last_start_ok",
      containerId: "p",
    });
  }
  // Only the newest counts: an older failed one is not started in its place.
  const older = proxy("old", { createdAt: "2026-01-01T00:00:00Z" });
  const newer = proxy("new", { state: "exited", lastError: null });
  assert.equal(ingressStartDecision(scan([older, newer]), record, noHolds).action, "none");
});

Deno.test("a requested stop holds it down, even one that never ran; a stop in flight wins", () => {
  assert.deepEqual(
    ingressStartDecision(scan([proxy("p")]), record, { held: new Set(["p"]), stopping: new Set() }),
    {
      action: "none",
      reason: "held_by_stop",
      containerId: "p",
    },
  );
  assert.deepEqual(
    ingressStartDecision(scan([proxy("p")]), record, { held: new Set(), stopping: new Set(["p"]) }),
    {
      action: "none",
      reason: "stop_in_flight",
      containerId: "p",
    },
  );
});

Deno.test("the ingress rescan period is 30 s unless PLOYZ_INGRESS_RESCAN_SECONDS names a positive number", () => {
  assert.equal(ingressRescanMsFromEnv(() => undefined), 30_000);
  assert.equal(ingressRescanMsFromEnv(() => "10"), 10_000);
  assert.equal(ingressRescanMsFromEnv(() => "0"), 30_000);
  assert.equal(ingressRescanMsFromEnv(() => "soon"), 30_000);
});
