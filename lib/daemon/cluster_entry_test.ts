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

const joinTo = { "cluster_id": "c1", "cluster_name": "prod", subnet: "10.210.1.0/24", peers: [] };

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

Deno.test("found and join take a subnet in any private range and refuse one outside them, naming both", () => {
  for (const subnet of ["10.217.1.0/24", "172.16.0.0/24", "172.31.255.0/24", "192.168.7.0/24"]) {
    assert.ok("subnet" in checkFound(FRESH, { subnet }), subnet);
    assert.ok("subnet" in checkJoin(FRESH, { ...joinTo, subnet }), subnet);
  }
  for (
    const subnet of ["11.0.0.0/24", "172.15.9.0/24", "172.32.0.0/24", "192.169.0.0/24", "203.0.113.0/24"]
  ) {
    for (
      const check of [() => checkFound(FRESH, { subnet }), () => checkJoin(FRESH, { ...joinTo, subnet })]
    ) {
      assert.throws(check, (error: Error & { code?: string }) => {
        assert.equal(error.code, "invalid_argument");
        assert.equal(
          error.message,
          `Invalid subnet "${subnet}": a Machine subnet must lie in a private range (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16)`,
        );
        return true;
      });
    }
  }
  // Checked before the phase: a participating Machine asked for a public subnet is told what is wrong with it.
  assert.equal(code(() => checkFound(IN, { subnet: "8.8.8.0/24" })), "invalid_argument");
});
