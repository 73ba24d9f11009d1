import assert from "node:assert/strict";
import { labelRequest, listedMachine, onOff, retiredNotice } from "./machine_settings.ts";
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

Deno.test("listedMachine: an id first, else a name; none and a shared name are refused by name", () => {
  const machine = (id: string, name: string) => ({ id, name, endpoints: [], membership: "up" });
  const list = {
    observer: { "machine_id": "aaaa1", "machine_name": "m1" },
    "observed_at": "2026-01-01T00:00:00Z",
    machines: [
      machine("aaaa1", "m1"),
      machine("bbbb2", "web"),
      machine("cccc3", "web"),
      machine("web", "m4"),
    ],
  };
  assert.equal(listedMachine(list, "bbbb2").id, "bbbb2");
  assert.equal(listedMachine(list, "m1").id, "aaaa1");
  // An id wins over a name that another Machine holds.
  assert.equal(listedMachine(list, "web").name, "m4");
  const refusal = (wanted: string): OperatorError => {
    try {
      listedMachine({ ...list, machines: list.machines.slice(0, 3) }, wanted);
    } catch (error) {
      assert.ok(error instanceof OperatorError);
      return error;
    }
    throw new Error("accepted");
  };
  const missing = refusal("m9");
  assert.equal(missing.code, "not_found");
  assert.equal(missing.message, 'Cannot find Machine "m9" in the observation of "m1"');
  const shared = refusal("web");
  assert.equal(shared.code, "ambiguous");
  assert.equal(shared.message, 'Machine name "web" is held by 2 Machines (bbbb2, cccc3): give the id');
});
