import assert from "node:assert/strict";
import { generateSigningSecret } from "./signing.ts";
import { openStore, type Store } from "./store.ts";
import { readRemovalNotice, REMOVED_DETAIL, removedRefusal } from "./removal_notice.ts";

// m1 retires m3 while m3 is cut off; m3 comes back holding the Cluster as it was before (m1 and m2 admitted, their
// rows), and is shown the refusal m1 (or m2, relaying m1's row) answers it with.
function cluster(): { m1: Store; m2: Store; m3: Store; close(): void } {
  const open = (siteId: string): Store =>
    openStore({ path: ":memory:", siteId, clusterId: "c-r", signingSecret: generateSigningSecret() });
  const m1 = open("m1");
  const m2 = open("m2");
  const m3 = open("m3");
  for (const s of [m1, m2, m3]) {
    for (const o of [m1, m2, m3]) s.admit(o.siteId, o.signingKey!);
    for (const [id, name] of [["m1", "one"], ["m2", "two"], ["m3", "three"]]) {
      if (id === s.siteId) s.machines.put({ id, name });
    }
  }
  return { m1, m2, m3, close: () => [m1, m2, m3].forEach((s) => s.close()) };
}

async function sync(from: Store, to: Store): Promise<void> {
  await to.receive(await from.outbound(from.changesMissingFrom(to.vector()).changes));
}

Deno.test("a retired Machine believes the signed row that retired it, relayed or not, and names who and when", async () => {
  const { m1, m2, m3, close } = cluster();
  try {
    for (const [a, b] of [[m1, m3], [m2, m3], [m1, m2], [m2, m1]]) await sync(a, b);
    assert.equal(await removedRefusal(m1, "m3"), undefined, "no refusal before the mark");
    m1.retiredMachines.put({
      "machine_id": "m3",
      name: "three",
      "retired_by": "m1",
      "retired_at": "2026-12-02T01:00:00Z",
    });
    await sync(m1, m2);
    for (const peer of [m1, m2]) {
      const refusal = await removedRefusal(peer, "m3");
      assert.ok(refusal !== undefined);
      assert.equal(refusal.code, "unauthenticated");
      assert.match(
        refusal.message,
        /^Machine "three" \(m3\) was removed from this Cluster by Machine "one" at 2026-12-02T01:00:00Z/,
      );
      // As it travels: JSON, with the signature of the Machine that wrote it.
      const wire = JSON.parse(JSON.stringify(refusal.details));
      assert.deepEqual(readRemovalNotice(m3, wire), {
        machineId: "m3",
        retiredBy: "m1",
        retiredByName: "one",
        retiredAt: "2026-12-02T01:00:00Z",
        name: "three",
      });
    }
    assert.equal(m3.retiredMachines.get("m3"), undefined, "reading the notice merges nothing");
  } finally {
    close();
  }
});

Deno.test("a refusal whose row is forged, altered, someone else's or not a retirement is not believed", async () => {
  const { m1, m2, m3, close } = cluster();
  try {
    await sync(m1, m3);
    await sync(m2, m3);
    m1.retiredMachines.put({ "machine_id": "m3", name: "three", "retired_by": "m1", "retired_at": "t" });
    m1.retiredMachines.put({ "machine_id": "m2", name: "two", "retired_by": "m1" });
    const good = (await removedRefusal(m1, "m3"))!.details![REMOVED_DETAIL] as Record<string, unknown>;
    const reason = (details: unknown): string => {
      const read = readRemovalNotice(m3, details);
      assert.ok("reason" in read, JSON.stringify(read));
      return read.reason;
    };
    assert.match(reason(undefined), /carries no signed retired row/);
    assert.match(reason({ [REMOVED_DETAIL]: "x" }), /Malformed change/);
    assert.match(
      reason({ [REMOVED_DETAIL]: { ...good, body: good.body!.toString().replace('"t"', '"u"') } }),
      /signature is not Machine "m1"'s/,
    );
    const { sig: _sig, ...unsigned } = good;
    assert.match(reason({ [REMOVED_DETAIL]: unsigned }), /signature is not/);
    assert.match(
      reason({ [REMOVED_DETAIL]: (await removedRefusal(m1, "m2"))!.details![REMOVED_DETAIL] }),
      /retires Machine "m2", not this one/,
    );
    // A Machine this one never admitted signs its own "retirement" of it: refused.
    const stranger = openStore({
      path: ":memory:",
      siteId: "mx",
      clusterId: "c-r",
      signingSecret: generateSigningSecret(),
    });
    try {
      stranger.retiredMachines.put({ "machine_id": "m3", "retired_by": "mx" });
      const forged = (await removedRefusal(stranger, "m3"))!.details;
      assert.match(reason(JSON.parse(JSON.stringify(forged))), /signed by Machine "mx", not admitted here/);
    } finally {
      stranger.close();
    }
    const [machineRow] = await m1.outbound([m1.rowChange("machines", "m1")!]);
    assert.match(reason({ [REMOVED_DETAIL]: machineRow }), /row of "machines"/);
  } finally {
    close();
  }
});
