import assert from "node:assert/strict";
import { labelRequest, onOff, retiredNotice } from "./machine_settings.ts";
import { OperatorError } from "./errors.ts";

Deno.test("labelRequest reads KEY=VALUE words and --rm keys, refusing bad ones by name", () => {
  assert.deepEqual(labelRequest(["region=eu", "tier="], ["disk"]), {
    "set_labels": { region: "eu", tier: "" },
    "remove_labels": ["disk"],
  });
  const refused = (words: string[], rm: string[] = []): string => {
    try {
      labelRequest(words, rm);
      return "accepted";
    } catch (error) {
      assert.ok(error instanceof OperatorError);
      assert.equal(error.code, "invalid_argument");
      return error.message;
    }
  };
  assert.match(refused(["region"]), /Invalid label "region": expected KEY=VALUE/);
  assert.match(refused(["re gion=eu"]), /invalid label key "re gion"/);
  assert.match(refused([], ["-x"]), /invalid label key "-x"/);
  assert.match(refused(["a=1"], ["a"]), /both set and removed/);
  assert.match(refused([]), /at least one/);
});

Deno.test("onOff reads on and off and refuses anything else naming the flag", () => {
  assert.equal(onOff("workloads", "on"), true);
  assert.equal(onOff("workloads", "off"), false);
  assert.equal(onOff("workloads", undefined), undefined);
  assert.throws(() => onOff("ingress", "yes"), /Invalid --ingress "yes": expected on or off/);
});

Deno.test("retiredNotice names a Machine this operator removed as gone, and nothing else", () => {
  const history = [
    { subnet: "10.210.3.0/24", machineName: "m3", machineId: "id3", state: "published", savedAt: "t0" },
    { subnet: "10.210.3.0/24", machineName: "m3", machineId: "id3", state: "retired", savedAt: "t1" },
  ];
  assert.match(
    retiredNotice(history, "id3")!,
    /^Machine "m3" \(id3\) was removed .*"machine rm --gone" at t1/,
  );
  assert.equal(retiredNotice(history, "id2"), undefined);
  assert.equal(retiredNotice(history.slice(0, 1), "id3"), undefined);
});
