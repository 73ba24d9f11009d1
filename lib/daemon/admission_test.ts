import assert from "node:assert/strict";
import type { ContainerSpec } from "../deploy/mod.ts";
import { containerSpec } from "../deploy/testing/mod.ts";
import { RpcError } from "../rpc/mod.ts";
import { admit } from "./container_admission.ts";
import { configuredRecord, type LocalMachine } from "./machine_file.ts";

const record: LocalMachine = {
  id: "a".repeat(26),
  name: "m2",
  phase: "participating",
  labels: { region: "eu" },
};

function spec(fields: Partial<ContainerSpec> = {}): ContainerSpec {
  return containerSpec({ name: "shop-web-1-x", image: "img", ...fields });
}

function refusedCheck(fn: () => void): string {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof RpcError);
    assert.equal(error.code, "conflict");
    return `${error.details.check}: ${error.message}`;
  }
  return "admitted";
}

Deno.test("admission re-checks workloads, ingress and placement on the Machine's own record, naming the check", () => {
  assert.equal(refusedCheck(() => admit(record, spec())), "admitted");
  assert.equal(
    refusedCheck(() => admit(record, spec({ placement: { constraints: ["node.labels.region == eu"] } }))),
    "admitted",
  );
  assert.equal(
    refusedCheck(() => admit(record, spec({ placement: { constraints: ["node.labels.region == us"] } }))),
    'placement: Machine "m2" refuses to create "shop-web-1-x": constraint "node.labels.region == us" does not hold (its label region is "eu")',
  );
  assert.match(
    refusedCheck(() => admit(record, spec({ placement: { machines: ["m1"] } }))),
    /^placement: .*x-machines names "m1", not "m2"/,
  );
  const drained = { ...record, "accepts_workloads": false };
  assert.match(refusedCheck(() => admit(drained, spec())), /^accepts_workloads: .*does not accept workloads/);
  // The Ingress Proxy is gated by ingress acceptance only.
  const proxy = spec({ project: "ployz-system", service: "caddy" });
  assert.equal(refusedCheck(() => admit(drained, proxy)), "admitted");
  assert.match(
    refusedCheck(() => admit({ ...record, "accepts_ingress": false }, proxy)),
    /^accepts_ingress: .*does not accept ingress/,
  );
});

Deno.test("configuredRecord sets and removes labels and flags, and refuses a bad key changing nothing", () => {
  const next = configuredRecord(record, {
    "set_labels": { disk: "ssd" },
    "remove_labels": ["region"],
    "accepts_workloads": false,
  });
  assert.deepEqual(next.labels, { disk: "ssd" });
  assert.equal(next.accepts_workloads, false);
  assert.equal(next.accepts_ingress, undefined);
  assert.equal("labels" in configuredRecord(record, { "remove_labels": ["region"] }), false);
  assert.throws(
    () => configuredRecord(record, { "set_labels": { "bad key": "x" } }),
    (e: Error) =>
      e instanceof RpcError && e.code === "invalid_argument" &&
      /invalid label key "bad key".*\(nothing was changed\)/.test(e.message),
  );
  assert.deepEqual(record.labels, { region: "eu" });
});
