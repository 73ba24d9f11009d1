import assert from "node:assert/strict";
import { openStore } from "./store.ts";

const FIXTURE = new URL("./testdata/newer_rows.json", import.meta.url);

function unknownFields(text: string, known: string[]): Record<string, string> {
  const body = JSON.parse(text) as Record<string, unknown>;
  return Object.fromEntries(
    Object.entries(body).filter(([k]) => !known.includes(k)).map(([k, v]) => [k, JSON.stringify(v)]),
  );
}

Deno.test("rows from a newer release keep unknown fields through merge and rewrite", async () => {
  const { changes } = JSON.parse(await Deno.readTextFile(FIXTURE));
  using older = openStore({ path: ":memory:", siteId: "m-older", clusterId: "c" });
  using third = openStore({ path: ":memory:", siteId: "m-third", clusterId: "c" });
  assert.deepEqual(older.applyChanges(changes).rejected, []);
  const pointer = older.servingPointers.get("shop/web")!;
  assert.deepEqual(pointer.canary, { weight: 5, regions: ["eu", "us"], sticky: true });
  const machine = older.machines.get("m-newer")!;
  assert.equal(machine.capabilities?.[0], "deploy.v2");

  // An older Machine moves the pointer: known field changes, unknown ones ride along untouched.
  const rewrite = older.servingPointers.put({ ...pointer, deployment: "d2" });
  const known = ["project", "service", "deployment"];
  assert.deepEqual(unknownFields(rewrite.body!, known), unknownFields(changes[0].body, known));
  assert.ok(rewrite.body!.includes('"canary":{"weight":5,"regions":["eu","us"],"sticky":true}'));
  assert.ok(rewrite.body!.includes('"ratio":0.25'));

  // Relayed to a third replica, the original bytes arrive verbatim and the rewrite wins.
  third.applyChanges(older.changesMissingFrom(third.vector()).changes);
  assert.equal(third.dump(), older.dump());
  assert.equal(third.servingPointers.get("shop/web")?.deployment, "d2");
  assert.equal(
    JSON.parse(third.dump()).tables.machines[0][6],
    changes[1].body,
  );
});
