import assert from "node:assert/strict";
import { openStore } from "../store/mod.ts";
import { pointerStatus, setServingPointer } from "./pointer.ts";
import { supersededOf } from "./serving_set.ts";

Deno.test("a moved pointer lists what it superseded, never the Deployment it names", () => {
  const store = openStore({ path: ":memory:", siteId: "m1", clusterId: "c" });
  store.machines.put({ id: "m1", name: "one" });
  const row = (id: string, deployment: string) => ({
    id,
    "machine_id": "m1",
    project: "p",
    service: "web",
    deployment,
    name: id,
    image: "i",
  });
  store.containers.put(row("a0", "A0"));
  store.containers.put(row("a1", "A"));
  const first = setServingPointer(store, { project: "p", service: "web", deployment: "A" });
  assert.deepEqual(supersededOf(first.pointer), ["A0"]);
  store.containers.put(row("b1", "B"));
  const second = setServingPointer(store, { project: "p", service: "web", deployment: "B" });
  assert.equal(second.previous?.deployment, "A");
  assert.equal(second.pointer.version, 2);
  assert.deepEqual(supersededOf(second.pointer), ["A", "A0"]);
  assert.deepEqual(pointerStatus(store, { project: "p", service: "web" }).missing, ["m1"]);
  store.close();
});
