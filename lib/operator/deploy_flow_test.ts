// The Deploy flow on fake Machines (pure logic; the real path is tests/deploy_e2e_test.ts and
// tests/lab_deploy_test.ts): what it observes, refuses, asks, runs, records and reports.
import { deepEqual, equal, ok, rejects } from "node:assert/strict";
import {
  type BuildFrame,
  type BuildRequest,
  type BuildUploadRequest,
  type BuildUploadResponse,
  CAPABILITIES,
} from "../rpc/mod.ts";
import { CodedError } from "../util/mod.ts";
import { deployProject, type FlowOptions } from "./deploy_flow.ts";
import { cluster, compose, FakeBook, FakeMachine, recorder } from "./deploy_test_fake.ts";

const SHOP = compose(`name: shop
services:
  web:
    image: app:1
    deploy: { replicas: 2 }
`);

function options(report = recorder(), fields: Partial<FlowOptions> = {}): FlowOptions {
  return { report, yes: false, dryRun: false, confirmDataLoss: [], verb: "deploy", ...fields };
}

function request(project = SHOP): { project: typeof SHOP; warnings: string[]; sourcePath: string } {
  return { project, warnings: [], sourcePath: "compose.yaml" };
}

Deno.test("a Deploy plans on the observed Machines and names the failed and the omitted one", async () => {
  const one = new FakeMachine("m1", "one");
  const two = new FakeMachine("m2", "two");
  two.down = new CodedError("unavailable", "Docker is not answering");
  const book = new FakeBook();
  const report = recorder();
  const result = await deployProject(cluster([one, two], ["three"]), book, request(), options(report));
  equal(result.status, "ran");
  const plan = report.previews[0];
  ok(plan.ops.every((op) => op.machineId === "m1"), "nothing is planned on a Machine not observed");
  ok(plan.warnings.some((w) => w.includes(`"two" was not observed (unavailable: Docker is not answering)`)));
  ok(plan.warnings.some((w) => w.includes(`"three" was not asked: no route to it from this CLI`)));
  deepEqual(two.calls, []);
  equal(one.calls.filter((c) => c.startsWith("ensure")).length, 2);
  // Preview, the operator's answer, progress, then the recorded Outcome.
  equal(report.log[0], "preview 3");
  equal(report.log[1], "confirm Proceed with 3 operations?");
  equal(report.log.at(-2), "event outcome");
  equal(report.log.at(-1), "outcome succeeded");
  equal(book.savedState("shop")?.sourcePath, "compose.yaml");
  deepEqual(book.history, [
    `${plan.deploymentId.slice(0, 4)} running`,
    `${plan.deploymentId.slice(0, 4)} succeeded`,
  ]);
  const record = book.deployments("shop")[0].outcome as Record<string, unknown>;
  equal(typeof record.intent_digest, "string");
});

Deno.test("a Deploy asking for a capability a Machine does not serve is refused before the operator is asked", async () => {
  const one = new FakeMachine("m1", "one");
  one.missing.add(CAPABILITIES.waitHealthy);
  const book = new FakeBook();
  const report = recorder();
  await rejects(
    deployProject(cluster([one]), book, request(), options(report)),
    (e: CodedError) => e.code === "unsupported" && e.message.includes(CAPABILITIES.waitHealthy),
  );
  deepEqual(report.log, []);
  deepEqual(one.calls, []);
  equal(book.savedState("shop"), undefined);
  deepEqual(book.history, []);
});

Deno.test("a Machine that cannot be observed by capability is a Snapshot failure, not a crash", async () => {
  const one = new FakeMachine("m1", "one");
  const two = new FakeMachine("m2", "two");
  two.missing.add(CAPABILITIES.listContainers);
  const report = recorder();
  await deployProject(cluster([one, two]), new FakeBook(), request(), options(report, { dryRun: true }));
  ok(report.previews[0].warnings.some((w) => w.includes(`"two" was not observed (unsupported:`)));
});

Deno.test("a failing operation ends in a partial Outcome, recorded with what completed and what was not attempted", async () => {
  const one = new FakeMachine("m1", "one");
  one.failEnsure = /web-2/;
  const book = new FakeBook();
  const report = recorder();
  const result = await deployProject(cluster([one]), book, request(), options(report, { yes: true }));
  equal(result.status, "ran");
  if (result.status !== "ran") return;
  equal(result.outcome.status, "partial");
  equal(result.outcome.completed.length, 1);
  ok(result.outcome.notAttempted.length >= 1);
  equal(report.outcomes[0], result.outcome);
  ok(!report.log.some((l) => l.startsWith("confirm")), "-y does not ask");
  equal(book.deployments("shop")[0].status, "partial");
  // Admitted before it ran: the Saved State is the intent, whatever the Outcome.
  ok(book.savedState("shop") !== undefined);
});

Deno.test("a declined Deploy changes nothing and saves nothing", async () => {
  const one = new FakeMachine("m1", "one");
  const book = new FakeBook();
  const result = await deployProject(cluster([one]), book, request(), options(recorder(false)));
  equal(result.status, "declined");
  deepEqual(one.calls, []);
  equal(book.savedState("shop"), undefined);
  deepEqual(book.history, []);
});

Deno.test("a dry run previews without a capability check, a save or a question", async () => {
  const one = new FakeMachine("m1", "one");
  one.missing.add(CAPABILITIES.ensureContainer);
  const book = new FakeBook();
  const report = recorder();
  const result = await deployProject(cluster([one]), book, request(), options(report, { dryRun: true }));
  equal(result.status, "previewed");
  deepEqual(report.log, ["preview 3"]);
  equal(book.savedState("shop"), undefined);
});

Deno.test("a Deploy with nothing to do saves the Saved State and reports an empty succeeded Outcome", async () => {
  const one = new FakeMachine("m1", "one");
  const book = new FakeBook();
  await deployProject(cluster([one]), book, request(), options(recorder(), { yes: true }));
  book.states.delete("shop");
  const report = recorder();
  const result = await deployProject(cluster([one]), book, request(), options(report));
  equal(result.status, "unchanged");
  deepEqual(report.log, ["preview 0", "event outcome"]);
  const event = report.events[0];
  equal(event.type === "outcome" ? event.outcome.status : undefined, "succeeded");
  ok(book.savedState("shop") !== undefined);
});

Deno.test("a killed run of the same intent is resumed under its Deployment id", async () => {
  const one = new FakeMachine("m1", "one");
  one.failEnsure = /web-2/;
  const book = new FakeBook();
  const first = await deployProject(cluster([one]), book, request(), options(recorder(), { yes: true }));
  // As if the process died mid-run: the record stays `running`.
  book.records[0] = { ...book.records[0], status: "running" };
  one.failEnsure = undefined;
  const report = recorder();
  const second = await deployProject(cluster([one]), book, request(), options(report, { yes: true }));
  equal(second.plan.deploymentId, first.plan.deploymentId);
  ok(second.plan.warnings[0].startsWith("Resuming Deployment"));
  equal(second.status === "ran" ? second.outcome.status : undefined, "succeeded");
});

Deno.test("a Deploy from Saved State runs a built Service's tag and reads no build context", async () => {
  const one = new FakeMachine("m1", "one");
  one.images.add("shop-web:0123456789abcdef");
  const saved = compose(`name: shop
services:
  web:
    build: /nonexistent/context
    deploy: { replicas: 1 }
`);
  saved.services.web = { ...saved.services.web, image: "shop-web:0123456789abcdef" };
  const report = recorder();
  const result = await deployProject(cluster([one]), new FakeBook(), request(saved), options(report));
  equal(result.status, "ran");
  ok(
    report.previews[0].ops.some((op) =>
      op.kind === "create" && op.spec.image === "shop-web:0123456789abcdef"
    ),
  );
});

/** A Machine that builds: it takes the context's pieces and answers a build with `frames` (then holds the image). */
class BuildingMachine extends FakeMachine {
  received = 0;
  frames: BuildFrame[] = [{ type: "log", text: "Step 1/1 : FROM app:1" }];

  buildUpload(r: BuildUploadRequest): Promise<BuildUploadResponse> {
    this.calls.push("upload");
    this.received = r.offset + atob(r.data).length;
    return Promise.resolve({ received: this.received });
  }
  buildImage(r: BuildRequest): Promise<ReadableStream<Uint8Array>> {
    this.calls.push("build");
    const frames = [...this.frames];
    if (!frames.some((f) => f.type === "failed")) {
      this.images.add(r.tags[0]);
      frames.push({ type: "done", "image_id": "sha256:1", "duration_ms": 1, built: true });
    }
    const text = frames.map((f) => JSON.stringify(f) + "\n").join("");
    return Promise.resolve(new Response(text).body!);
  }
}

async function buildProject(): Promise<{ project: typeof SHOP; dir: string }> {
  const dir = await Deno.makeTempDir({ prefix: "ployz-flow-" });
  await Deno.writeTextFile(`${dir}/Dockerfile`, "FROM app:1\n");
  const project = compose(`name: shop
services:
  web:
    build: ${dir}
    deploy: { replicas: 1 }
`);
  return { project, dir };
}

Deno.test("with -y a build runs while the plan is made; the Preview and the operations follow it", async () => {
  const { project, dir } = await buildProject();
  try {
    const one = new BuildingMachine("m1", "one");
    const report = recorder();
    report.build = (event) => report.log.push(`build ${event.type}`);
    const result = await deployProject(
      cluster([one]),
      new FakeBook(),
      request(project),
      options(report, { yes: true }),
    );
    equal(result.status === "ran" ? result.outcome.status : undefined, "succeeded");
    const preview = report.log.findIndex((l) => l.startsWith("preview"));
    deepEqual(report.log.slice(0, preview), [
      "build planned",
      "build sending",
      "build sent",
      "build log",
      "build built",
    ]);
    deepEqual(one.calls.slice(0, 2), ["upload", "build"]);
    ok(one.calls.some((c) => c.startsWith("ensure")), one.calls.join(","));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("with -y a failed build is what is told, even when the plan is refused too, and nothing runs", async () => {
  const { project, dir } = await buildProject();
  try {
    const one = new BuildingMachine("m1", "one");
    one.frames.push({ type: "failed", code: "invalid_argument", message: "exit 7", tail: ["broken step"] });
    one.missing.add(CAPABILITIES.waitHealthy);
    const book = new FakeBook();
    await rejects(
      deployProject(cluster([one]), book, request(project), options(recorder(), { yes: true })),
      (e: CodedError) =>
        e.code === "invalid_argument" &&
        /^Build of service "web" failed at stage "build" on Machine "one": exit 7; stages "distribute" and "deploy" not attempted, nothing changed$/
          .test(e.message),
    );
    ok(!one.calls.some((c) => c.startsWith("ensure")), one.calls.join(","));
    equal(book.savedState("shop"), undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
