import assert from "node:assert/strict";
import fc from "fast-check";
import { constraintHolds, labelKeyProblem, parseConstraint, placementRefusal } from "./placement.ts";
import { loadText } from "./test_helpers.ts";
import { ComposeError } from "./issue.ts";

const SHOP = { path: "compose.yaml", projectName: "shop" };
const m2 = { id: "id2", name: "m2", labels: { region: "eu", disk: "ssd" } };

Deno.test("parseConstraint reads Swarm's node.labels, node.hostname and node.id with == and !=", () => {
  assert.deepEqual(parseConstraint("node.labels.region==eu"), {
    field: "label",
    label: "region",
    op: "==",
    value: "eu",
    text: "node.labels.region == eu",
  });
  assert.equal((parseConstraint("  node.hostname  !=  m2 ") as { text: string }).text, "node.hostname != m2");
  assert.equal((parseConstraint("node.id == id2") as { field: string }).field, "id");
  assert.match(parseConstraint("node.role == manager") as string, /unsupported placement constraint/);
  assert.match(parseConstraint("node.labels.region") as string, /expected "node.labels.KEY == VALUE"/);
  assert.match(parseConstraint("node.labels.-x == 1") as string, /invalid label key "-x"/);
  assert.match(parseConstraint("node.labels.a == two words") as string, /must be one word/);
});

Deno.test("constraints hold as Swarm's do: an unset label equals nothing", () => {
  const holds = (text: string) => constraintHolds(parseConstraint(text) as never, m2);
  assert.equal(holds("node.labels.region == eu"), true);
  assert.equal(holds("node.labels.region != eu"), false);
  assert.equal(holds("node.labels.zone == a"), false);
  assert.equal(holds("node.labels.zone != a"), true);
  assert.equal(holds("node.hostname == m2"), true);
  assert.equal(holds("node.id != id2"), false);
});

Deno.test("placementRefusal names the check that failed, x-machines first", () => {
  assert.equal(placementRefusal({ constraints: ["node.labels.region == eu"] }, m2), undefined);
  assert.equal(
    placementRefusal({ machines: ["m1"] }, m2),
    'x-machines names "m1", not "m2"',
  );
  assert.equal(
    placementRefusal({ constraints: ["node.labels.region == us"] }, m2),
    'constraint "node.labels.region == us" does not hold (its label region is "eu")',
  );
  assert.equal(
    placementRefusal({ constraints: ["node.labels.zone == a"] }, m2),
    'constraint "node.labels.zone == a" does not hold (its label zone is unset)',
  );
  // Untrusted input: an unparsable constraint refuses as itself, never throws.
  assert.match(placementRefusal({ constraints: ["garbage"] }, m2)!, /invalid placement constraint "garbage"/);
});

Deno.test("placementRefusal never throws and agrees with the constraints one by one (property)", () => {
  const word = fc.stringMatching(/^[a-z0-9]{1,4}$/);
  fc.assert(fc.property(
    fc.dictionary(word, word, { maxKeys: 4 }),
    fc.array(fc.tuple(word, fc.constantFrom("==", "!="), word), { maxLength: 4 }),
    (labels, parts) => {
      const machine = { id: "i", name: "n", labels };
      const constraints = parts.map(([k, op, v]) => `node.labels.${k} ${op} ${v}`);
      const all = constraints.every((c) => constraintHolds(parseConstraint(c) as never, machine));
      return (placementRefusal({ constraints }, machine) === undefined) === all;
    },
  ));
});

Deno.test("labelKeyProblem refuses what cannot be a label key", () => {
  assert.equal(labelKeyProblem("region"), undefined);
  assert.equal(labelKeyProblem("com.example.tier_1"), undefined);
  for (const bad of ["", "-a", "a-", "a b", "a=b", "é", "x".repeat(129)]) {
    assert.notEqual(labelKeyProblem(bad), undefined, bad);
  }
});

Deno.test("loadCompose reads deploy.placement.constraints and refuses a bad one at file:line:col", () => {
  const { project } = loadText(
    [
      "services:",
      "  web:",
      "    image: nginx",
      "    deploy:",
      "      placement:",
      "        constraints: ['node.labels.region==eu', 'node.hostname != m2']",
    ].join("\n"),
    SHOP,
  );
  assert.deepEqual(project.services.web.constraints, ["node.labels.region == eu", "node.hostname != m2"]);
  const plain = loadText("services:\n  web:\n    image: nginx\n", SHOP);
  assert.equal("constraints" in plain.project.services.web, false);
  assert.throws(
    () =>
      loadText(
        [
          "services:",
          "  web:",
          "    image: nginx",
          "    deploy:",
          "      placement:",
          "        constraints:",
          "          - node.platform.os == linux",
        ].join("\n"),
        SHOP,
      ),
    (e: Error) => {
      assert.ok(e instanceof ComposeError);
      assert.match(
        e.message,
        /compose\.yaml:7:13: .*unsupported placement constraint "node\.platform\.os == linux"/,
      );
      return true;
    },
  );
});
