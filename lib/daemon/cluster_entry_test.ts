import assert from "node:assert/strict";
import { checkFound, checkJoin } from "./cluster_entry.ts";
import type { LocalMachine } from "./machine_file.ts";

const FRESH: LocalMachine = { id: "m1", name: "one", phase: "uninitialized" };
const IN: LocalMachine = {
  id: "m1",
  name: "one",
  phase: "participating",
  "cluster_id": "c1",
  "cluster_name": "prod",
  subnet: "10.210.1.0/24",
};

function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
}

Deno.test("found: a fresh Machine enters with the default subnet; a repeat is a no-op; a mismatch names the field", () => {
  assert.deepEqual(checkFound(FRESH, {}), { subnet: { subnet: "10.210.1.0/24", gateway: "10.210.1.1" } });
  assert.equal(code(() => checkFound(FRESH, { subnet: "10.210.0.0/23" })), "invalid_argument");
  assert.deepEqual(checkFound(IN, { clusterName: "prod" }), { already: IN });
  assert.equal(code(() => checkFound(IN, { clusterName: "staging" })), "conflict");
  assert.equal(code(() => checkFound({ ...IN, phase: "joining" }, {})), "conflict");
});

Deno.test("join: a fresh Machine enters; the same Cluster and subnet again is a no-op; another Cluster is refused", () => {
  const req = { "cluster_id": "c1", "cluster_name": "prod", subnet: "10.210.1.0/24", peers: [] };
  assert.ok("subnet" in checkJoin(FRESH, req));
  assert.deepEqual(checkJoin(IN, req), { already: IN });
  assert.equal(code(() => checkJoin(IN, { ...req, "cluster_id": "c2" })), "conflict");
  assert.equal(code(() => checkJoin(FRESH, { ...req, subnet: "nonsense" })), "invalid_argument");
});
