import { deepEqual, equal } from "node:assert/strict";
import { subnetCollisions } from "./collisions.ts";

Deno.test("subnetCollisions groups overlapping rows once and ignores rows without a readable subnet", () => {
  const found = subnetCollisions([
    { id: "a", name: "m1", subnet: "10.210.0.0/24" },
    { id: "b", name: "m2", subnet: "10.210.3.0/24" },
    { id: "c", name: "m3" },
    { id: "d", name: "m4", subnet: "10.210.3.0/24" },
    { id: "e", name: "m5", subnet: "not a subnet" },
    { id: "f", name: "m6", subnet: "10.210.3.0/24" },
  ]);
  equal(found.length, 1);
  deepEqual(found[0].machines.map((m) => m.id), ["b", "d", "f"]);
  deepEqual(subnetCollisions([{ id: "a", name: "m1", subnet: "10.210.0.0/24" }]), []);
});
