// The removal flow on fake Machines (pure logic; the real path is tests/lab_removal_test.ts): the refusal of an
// unknown Project, the mark it writes, the Saved State it removes, and what it reports as done or pending.
import { deepEqual, equal, ok, rejects } from "node:assert/strict";
import type { MarkRemovalRequest, MarkRemovalResponse } from "../rpc/mod.ts";
import { CodedError } from "../util/mod.ts";
import { deployProject } from "./deploy_flow.ts";
import { cluster, compose, FakeBook, FakeMachine, receiptBook, recorder } from "./deploy_test_fake.ts";
import { type RemovalOptions, type RemovalReceipt, removeWithMark } from "./removal_flow.ts";

const SHOP = compose(`name: shop
services:
  web:
    image: app:1
    deploy: { replicas: 2 }
  db:
    image: app:1
    volumes: ["data:/var/lib/db"]
volumes:
  data: {}
`);

/** An Entry Machine whose mark removes the covered containers of `holders` at once, as their daemons would. */
class Entry extends FakeMachine {
  marks: MarkRemovalRequest[] = [];
  constructor(id: string, name: string, readonly holders: () => FakeMachine[]) {
    super(id, name);
  }
  markRemoval(request: MarkRemovalRequest): Promise<MarkRemovalResponse> {
    this.marks.push(request);
    for (const m of this.holders()) {
      if (m.down !== undefined) continue;
      for (const [id, c] of m.containers) {
        if (
          c.project === request.project && (request.service === undefined || c.service === request.service)
        ) {
          m.containers.delete(id);
        }
      }
    }
    const removal = { ...request, service: request.service ?? "*" };
    return Promise.resolve({ removal });
  }
  listRemovals(): Promise<{ removals: [] }> {
    return Promise.resolve({ removals: [] });
  }
}

function options(lines: string[] = []): RemovalOptions {
  return { report: recorder(), progress: (l) => lines.push(l), yes: true, patienceMs: 200, pollMs: 10 };
}

async function deployed(): Promise<{ one: Entry; two: FakeMachine; book: FakeBook }> {
  const two = new FakeMachine("m2", "two");
  const one: Entry = new Entry("m1", "one", () => [one, two]);
  const book = new FakeBook();
  const flow = { report: recorder(), yes: true, dryRun: false, confirmDataLoss: [], verb: "deploy" };
  await deployProject(cluster([one, two]), book, {
    project: SHOP,
    warnings: [],
    sourcePath: "compose.yaml",
  }, flow);
  return { one, two, book };
}

Deno.test("removing a Project that does not exist is a clear not_found, and nothing is marked", async () => {
  const { one, two, book } = await deployed();
  await rejects(
    removeWithMark(cluster([one, two]), book, { project: "nope" }, options()),
    (e: CodedError) =>
      e.code === "not_found" &&
      e.message ===
        `Project "nope" does not exist: no Saved State, and none of the 2 Machines that answered runs ` +
          `a container of it`,
  );
  await rejects(
    removeWithMark(cluster([one, two]), book, { project: "shop", service: "cache" }, options()),
    (e: CodedError) => e.code === "not_found" && e.message.startsWith(`Service "shop/cache" does not exist`),
  );
  equal(one.marks.length, 0);
});

Deno.test("a removal marks every Deployment seen, removes the Saved State and reports each container", async () => {
  const { one, two, book } = await deployed();
  const before = one.containers.size + two.containers.size;
  ok(before >= 3);
  const lines: string[] = [];
  const result = await removeWithMark(cluster([one, two]), book, { project: "shop" }, options(lines));
  equal(result.status, "ran");
  if (result.status !== "ran") return;
  equal(result.outcome.status, "done");
  equal(result.outcome.removed.length, before);
  equal(lines.length, before);
  equal(result.outcome.savedState, "removed");
  equal(book.savedState("shop"), undefined);
  deepEqual(result.outcome.volumesKept, ["shop_data"]);
  equal(one.marks.length, 1);
  const mark = one.marks[0];
  equal(mark.state, "active");
  const deploy = book.records.find((r) => (r.outcome as Record<string, unknown>).removal === undefined)!;
  ok(mark.deployments.includes(deploy.id));
  deepEqual(mark.ack_from, ["m1", "m2"]);
  equal(book.deployments("shop")[0].status, "succeeded");
});

Deno.test("a Machine not reached leaves the removal pending with its reason", async () => {
  const { one, two, book } = await deployed();
  two.down = new CodedError("unavailable", "no route to Machine two");
  const result = await removeWithMark(cluster([one, two], ["three"]), book, { project: "shop" }, options());
  if (result.status !== "ran") throw new Error("not run");
  equal(result.outcome.status, "pending");
  deepEqual(result.outcome.pending.map((p) => p.machineName), ["three", "two"]);
  ok(result.outcome.pending.find((p) => p.machineName === "two")!.reason.includes("no route to Machine two"));
  deepEqual(one.marks[0].ack_from, ["m1"]);
  equal(book.deployments("shop")[0].status, "partial");
});

Deno.test("removing one Service keeps the others in the Saved State", async () => {
  const { one, two, book } = await deployed();
  const result = await removeWithMark(
    cluster([one, two]),
    book,
    { project: "shop", service: "web" },
    options(),
  );
  if (result.status !== "ran") throw new Error("not run");
  equal(result.outcome.savedState, "service_removed");
  deepEqual(Object.keys((book.savedState("shop")!.compose as typeof SHOP).services), ["db"]);
  equal(one.marks[0].service, "web");
  ok([...one.containers.values(), ...two.containers.values()].every((c) => c.service === "db"));
});

Deno.test("--volumes is Data Loss: refused until each volume is named, then carried by the mark", async () => {
  const { one, two, book } = await deployed();
  await rejects(
    removeWithMark(cluster([one, two]), book, { project: "shop" }, { ...options(), volumes: true }),
    (e: CodedError) =>
      e.code === "invalid_argument" &&
      e.message ===
        `Refusing to remove volumes without confirmation: it destroys "shop_data"; confirm with ` +
          `--confirm-data-loss shop_data`,
  );
  equal(one.marks.length, 0);
  const result = await removeWithMark(cluster([one, two]), book, { project: "shop" }, {
    ...options(),
    volumes: true,
    confirmDataLoss: ["shop_data"],
  });
  if (result.status !== "ran") throw new Error("not run");
  deepEqual(one.marks[0].volumes, ["shop_data"]);
  deepEqual(result.outcome.volumesRemoved, ["shop_data"]);
  deepEqual(result.outcome.volumesKept, []);
  deepEqual(result.plan.dataLoss.map((d) => d.name), ["shop_data"]);
});

Deno.test("a removal keeps a receipt per leg; a re-run with the same key marks nothing again and finishes", async () => {
  const { one, two, book } = await deployed();
  two.down = new CodedError("unavailable", "no route to Machine two");
  const receipts = receiptBook<RemovalReceipt>();
  const saved = receipts.legs;
  const first = await removeWithMark(cluster([one, two]), book, { project: "shop" }, {
    ...options(),
    receipts,
  });
  if (first.status !== "ran") throw new Error("not run");
  equal(first.outcome.status, "pending");
  const mark = saved.get("mark")!;
  deepEqual(mark, {
    status: "marked",
    removal: "shop/*",
    removalId: first.outcome.removalId,
    savedState: "removed",
    volumesKept: ["shop_data"],
    volumesRemoved: [],
  });
  equal(saved.get("wait")?.status, "pending");

  // Machine two answers again and removes its containers on its own (as its daemon honours the mark); the re-run
  // neither asks nor marks, and reports the removal done under the same id.
  two.down = undefined;
  two.containers.clear();
  const again = await removeWithMark(cluster([one, two]), book, { project: "shop" }, {
    ...options(),
    yes: false,
    receipts,
  });
  if (again.status !== "ran") throw new Error("not run");
  equal(one.marks.length, 1, "marked once");
  equal(again.outcome.removalId, first.outcome.removalId);
  equal(again.outcome.status, "done");
  equal(again.outcome.savedState, "removed");
  equal(saved.get("wait")?.status, "done");

  // The key names one removal: another target under it is refused.
  await rejects(
    removeWithMark(cluster([one, two]), book, { project: "other" }, { ...options(), receipts }),
    (e: CodedError) =>
      e.code === "invalid_argument" && /used to remove "shop\/\*", not "other\/\*"/.test(e.message),
  );
});
