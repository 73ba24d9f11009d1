import assert, { deepEqual, equal } from "node:assert/strict";
import { deployProject } from "./deploy_flow.ts";
import { cluster, compose, FakeBook, FakeMachine, receiptBook, recorder } from "./deploy_test_fake.ts";
import { checkSomewhereToGo, type DrainLegReceipt, drainMachine, pickDrained } from "./drain.ts";
import { OperatorError } from "./errors.ts";

const handles = [
  { id: "aaaa1111", name: "m1", api: {} },
  { id: "bbbb2222", name: "m2", api: {} },
];

function code(fn: () => unknown): string {
  try {
    fn();
    return "ok";
  } catch (error) {
    assert.ok(error instanceof OperatorError);
    return `${error.code}: ${error.message}`;
  }
}

Deno.test("pickDrained finds one reachable Machine by name, id or prefix, and refuses the rest by reason", () => {
  assert.equal(pickDrained(handles, [], "m2").id, "bbbb2222");
  assert.equal(pickDrained(handles, [], "aaaa").name, "m1");
  assert.match(code(() => pickDrained(handles, [], "m9")), /^not_found: No Machine "m9"/);
  assert.match(
    code(() => pickDrained(handles, [{ machineName: "m3", reason: "no route to it" }], "m3")),
    /^unavailable: Cannot drain Machine "m3": no route to it \(nothing was changed\)/,
  );
  assert.match(
    code(() => pickDrained([...handles, { id: "cccc", name: "m1", api: {} }], [], "m1")),
    /^ambiguous: /,
  );
});

Deno.test("draining the last Machine accepting workloads is refused unless forced", () => {
  const on = { id: "x", name: "m1", phase: "participating" };
  const off = { ...on, "accepts_workloads": false };
  assert.equal(code(() => checkSomewhereToGo({ name: "m2" }, [{ name: "m1", record: on }], false)), "ok");
  const refused = code(() =>
    checkSomewhereToGo({ name: "m2" }, [{ name: "m1", record: off }, { name: "m3" }], false)
  );
  assert.match(refused, /^conflict: Refusing to drain Machine "m2": no other Machine .* --force/);
  assert.equal(code(() => checkSomewhereToGo({ name: "m2" }, [], true)), "ok");
  assert.match(code(() => checkSomewhereToGo({ name: "m2" }, [], false)), /^conflict/);
});

class Drainable extends FakeMachine {
  accepts = true;
  override status(): ReturnType<FakeMachine["status"]> {
    return super.status().then((s) => ({
      ...s,
      machine: { ...s.machine, "accepts_workloads": this.accepts },
    }));
  }
  configureMachine(request: { "accepts_workloads"?: boolean }) {
    this.calls.push(`configure ${JSON.stringify(request)}`);
    if (request.accepts_workloads !== undefined) this.accepts = request.accepts_workloads;
    return this.status();
  }
}

Deno.test("a Drain turns workloads off, re-places the Machine's replicated slots, keeps its Global slot, and resumes by receipts", async () => {
  const one = new Drainable("m1", "one");
  const two = new Drainable("m2", "two");
  const book = new FakeBook();
  const project = compose(
    "name: shop\nservices:\n  web:\n    image: app:1\n    deploy: {replicas: 2}\n  agent:\n    image: app:1\n    deploy: {mode: global}\n",
  );
  const deployOptions = { report: recorder(), yes: true, dryRun: false, confirmDataLoss: [], verb: "deploy" };
  await deployProject(
    cluster([one, two]),
    book,
    { project, warnings: [], sourcePath: "c.yaml" },
    deployOptions,
  );
  const where = (m: FakeMachine) => [...m.containers.values()].map((c) => c.service).sort();
  deepEqual(where(two), ["agent", "web"]);

  const both = { handles: [one, two].map((m) => ({ id: m.id, name: m.name, api: m })), omissions: [] };
  const receipts = receiptBook<DrainLegReceipt>();
  const result = await drainMachine(both, book, "two", {
    force: false,
    report: () => recorder(),
    receipts,
  });
  equal(two.accepts, false);
  deepEqual(result.projects, [{ project: "shop", status: "succeeded" }]);
  deepEqual(result.kept, ["shop/agent"]);
  deepEqual(where(two), ["agent"]);
  deepEqual(where(one), ["agent", "web", "web"]);
  deepEqual([...receipts.legs.entries()], [["accept", { status: "succeeded" }], ["deploy shop", {
    status: "succeeded",
  }]]);

  // The same request again sends no leg already done.
  const ensures = one.calls.length;
  const again = await drainMachine(both, book, "two", {
    force: false,
    report: () => recorder(),
    receipts,
  });
  equal(again.projects[0].detail, "done by an earlier run of this request");
  equal(one.calls.length, ensures, "nothing was sent to the other Machine");
});

Deno.test("a Drain names the Provisioned Volume copies it leaves behind, or why it could not read them", async () => {
  const one = new Drainable("m1", "one");
  const two = Object.assign(new Drainable("m2", "two"), {
    machinePool: () =>
      Promise.resolve({
        "machine_id": "two",
        "machine_name": "m2",
        pool: { kind: "btrfs", where: "/pool" },
        volumes: [
          { name: "shop_media", role: "mirror", snapshot: "g1", snapshots: ["g1"] },
          {
            name: "shop_db",
            role: "writer",
            epoch: 2,
            snapshots: [],
            project: "shop",
            "used_bytes": 3 * 2 ** 20,
          },
          { name: "old", role: "none", snapshots: [] },
        ],
      }),
  });
  const book = new FakeBook();
  const both = { handles: [one, two].map((m) => ({ id: m.id, name: m.name, api: m })), omissions: [] };
  const result = await drainMachine(both, book, "two", { force: false, report: () => recorder() });
  deepEqual(result.volumes, [
    { name: "shop_db", role: "writer", project: "shop", usedBytes: 3 * 2 ** 20 },
    { name: "shop_media", role: "mirror" },
  ]);
  equal(result.volumesUnknown, undefined);

  const silent = Object.assign(new Drainable("m2", "two"), {
    machinePool: () => Promise.reject(new Error("no answer within 15 s")),
  });
  const unread = await drainMachine(
    { handles: [one, silent].map((m) => ({ id: m.id, name: m.name, api: m })), omissions: [] },
    book,
    "two",
    { force: false, report: () => recorder() },
  );
  deepEqual(unread.volumes, []);
  equal(unread.volumesUnknown, "no answer within 15 s");
});
