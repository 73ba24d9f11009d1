import assert from "node:assert/strict";
import { type Change, checkChange, supersedes } from "./change.ts";

function change(overrides: Partial<Change> = {}): Change {
  return {
    site: "m1",
    version: 1,
    table: "containers",
    key: "c1",
    hlc: "000000000001000000",
    owner: "m1",
    deleted: false,
    body: JSON.stringify({ id: "c1", machine_id: "m1", project: "p", service: "s", name: "n", image: "i" }),
    ...overrides,
  };
}

function reason(input: unknown): string {
  const checked = checkChange(input);
  assert.ok("reason" in checked, "expected a refusal");
  return checked.reason;
}

Deno.test("last writer wins on hlc, then on site id", () => {
  assert.ok(supersedes({ hlc: "2", site: "a" }, { hlc: "1", site: "z" }));
  assert.ok(!supersedes({ hlc: "1", site: "z" }, { hlc: "2", site: "a" }));
  assert.ok(supersedes({ hlc: "1", site: "b" }, { hlc: "1", site: "a" }));
  assert.ok(!supersedes({ hlc: "1", site: "a" }, { hlc: "1", site: "a" }));
});

Deno.test("an owner's entity change is accepted", () => {
  assert.ok("change" in checkChange(change()));
  assert.ok("change" in checkChange(change({ deleted: true, body: null })));
});

Deno.test("an entity change from a site other than its owner is refused", () => {
  assert.match(reason(change({ site: "m2", owner: "m1" })), /owned by "m1", written by "m2"/);
  assert.match(reason(change({ site: "m2", owner: "m2" })), /names owner "m1", written by "m2"/);
  const machine = { site: "m2", owner: "m2", table: "machines", key: "m1", deleted: true, body: null };
  assert.match(reason(change(machine)), /names owner "m1"/);
  const ack = { table: "acks", key: "m2/p/s", owner: "m1", deleted: true, body: null };
  assert.match(reason(change(ack)), /names owner "m2"/);
});

Deno.test("name-keyed changes take no owner and accept any site", () => {
  const pointer = {
    table: "serving_pointers",
    key: "p/s",
    owner: "",
    site: "m9",
    body: JSON.stringify({ project: "p", service: "s", deployment: "d1" }),
  };
  assert.ok("change" in checkChange(change(pointer)));
  assert.match(reason(change({ ...pointer, owner: "m9" })), /takes no owner/);
  assert.match(reason(change({ ...pointer, key: "p/t" })), /does not match body key "p\/s"/);
});

Deno.test("malformed changes are refused with a reason", () => {
  assert.match(reason(null), /Malformed change/);
  assert.match(reason(change({ version: 0 })), /version/);
  assert.match(reason(change({ site: "Not A Site" })), /site/);
  assert.match(reason(change({ hlc: "later" })), /hlc/);
  assert.match(reason(change({ body: "{nope" })), /body is not JSON/);
  assert.match(reason(change({ body: "[1]" })), /not a JSON object/);
  assert.match(reason(change({ deleted: true })), /deleted is true but body is present/);
  assert.match(reason(change({ body: "x".repeat(300_000) })), /body/);
  assert.match(
    reason(change({ body: JSON.stringify({ id: "c1", machine_id: "m1" }) })),
    /Invalid containers body/,
  );
});

Deno.test("a change for a table this release does not know is carried unread", () => {
  assert.ok("change" in checkChange(change({ table: "future_things", owner: "", body: '{"x":1}' })));
});
