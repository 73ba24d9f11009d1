import assert from "node:assert/strict";
import { LabError } from "./errors.ts";
import { machineByName, planLab, wgInterfaceName } from "./plan.ts";

Deno.test("planLab() gives each Machine its namespace, interface, underlay address and subnet", () => {
  const plan = planLab({ name: "ployz-lab", machines: 3, dir: "/tmp/lab" });
  assert.equal(plan.underlayNamespace, "ployz-lab-u");
  assert.deepEqual(
    plan.machines.map((m) => [m.name, m.namespace, m.wgInterface, m.underlayAddress, m.subnet, m.gateway]),
    [
      ["m1", "ployz-lab-1", "plz1", "192.0.2.11", "10.210.0.0/24", "10.210.0.1"],
      ["m2", "ployz-lab-2", "plz2", "192.0.2.12", "10.210.1.0/24", "10.210.1.1"],
      ["m3", "ployz-lab-3", "plz3", "192.0.2.13", "10.210.2.0/24", "10.210.2.1"],
    ],
  );
  assert.equal(plan.machines[0].dockerSocket, "/tmp/lab/m1/docker.sock");
  assert.equal(plan.machines[2].keyPath, "/tmp/lab/m3/wg.key");
});

Deno.test("wgInterfaceName() is distinct per lab name and fits 15 characters", () => {
  const a = wgInterfaceName("t0a1b2c3d4e5", 20);
  const b = wgInterfaceName("t0a1b2c3d4e6", 20);
  assert.notEqual(a, b);
  assert.ok(a.length <= 15);
});

Deno.test("planLab() refuses bad names and sizes", () => {
  assert.throws(
    () => planLab({ name: "Bad_Name", machines: 1, dir: "/x" }),
    (e) => e instanceof LabError && e.code === "invalid_argument",
  );
  assert.throws(() => planLab({ name: "lab", machines: 0, dir: "/x" }), /expected 1 to 20/);
  assert.throws(() => planLab({ name: "lab", machines: 21, dir: "/x" }), /expected 1 to 20/);
  const plan = planLab({ name: "lab", machines: 2, dir: "/x" });
  assert.throws(() => machineByName(plan, "m3"), {
    message: 'Cannot find lab Machine "m3": the lab has m1, m2',
  });
});

Deno.test("planLab() allocates in another Cluster network when asked, and names a network that cannot be one", () => {
  const plan = planLab({ name: "lab", machines: 2, dir: "/x", network: "10.217.0.0/16" });
  assert.equal(plan.network, "10.217.0.0/16");
  assert.deepEqual(plan.machines.map((m) => m.subnet), ["10.217.0.0/24", "10.217.1.0/24"]);
  assert.throws(
    () => planLab({ name: "lab", machines: 1, dir: "/x", network: "10.217.0.1/16" }),
    (e) =>
      e instanceof LabError && e.code === "invalid_argument" && /network "10\.217\.0\.1\/16"/.test(e.message),
  );
});
