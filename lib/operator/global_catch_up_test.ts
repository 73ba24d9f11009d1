// Which operations of a full plan a Global catch-up keeps, and the pass over Saved States on fake Machines (pure
// logic; the real path is tests/lab_catch_up_test.ts): only creations on the joined Machine for Global Services and
// the Ingress Proxy, the image copies they need, and a pointer move only for a Service that never had one.
import { deepEqual, equal, ok } from "node:assert/strict";
import {
  deployIntent,
  loadCompose,
  type MachineObservation,
  type NormalizedProject,
  type ObservedContainerView,
  planDeploy,
  serviceContainerSpec,
  type Snapshot,
} from "../deploy/mod.ts";
import { CodedError } from "../util/mod.ts";
import { catchUpGlobal, catchUpOps } from "./global_catch_up.ts";
import { cluster, compose, FakeBook, FakeMachine, observedOf, recorder } from "./deploy_test_fake.ts";

const D1 = "d1".padEnd(32, "0");
const D2 = "d2".padEnd(32, "0");

const PROJECT: NormalizedProject = loadCompose({
  path: "fleet.yaml",
  env: {},
  text: `name: fleet
services:
  agent:
    image: agent:1
    deploy: { mode: global }
  web:
    image: web:1
    deploy: { replicas: 3 }
`,
}).project;

function container(service: string, slot: string, machineId: string, deployment = D1): ObservedContainerView {
  const spec = serviceContainerSpec(PROJECT, PROJECT.services[service], {
    deploymentId: deployment,
    slot,
    machineId: service === "agent" ? machineId : "",
  });
  return observedOf(spec, { id: `${service}-${slot}-${machineId}` });
}

function machine(id: string, containers: ObservedContainerView[], images: string[]): MachineObservation {
  return {
    machineId: id,
    machineName: id,
    phase: "participating",
    observedAt: "t",
    containers,
    images: Object.fromEntries(["agent:1", "web:1", "caddy:2"].map((i) => [i, images.includes(i)])),
    ingress: id === "m1"
      ? [{ ...container("web", "1", "m1"), project: "ployz-system", service: "caddy" }]
      : [],
  };
}

function snapshot(machines: MachineObservation[]): Snapshot {
  return { project: "fleet", observedAt: "t", machines, failures: [], omissions: [] };
}

function plan(s: Snapshot) {
  return planDeploy({
    intent: deployIntent(PROJECT, D2),
    snapshot: s,
    previous: PROJECT,
    serving: { ingress: { project: "ployz-system", service: "caddy", image: "caddy:2" } },
  });
}

Deno.test("catch-up keeps the joined Machine's Global creations, image copies and ingress fill", () => {
  const s = snapshot([
    machine("m1", [container("agent", "1", "m1"), container("web", "1", "m1")], [
      "agent:1",
      "web:1",
      "caddy:2",
    ]),
    // m2 runs its agent but misses web/2: a full Deploy would create it; catch-up must not.
    machine("m2", [container("agent", "1", "m2")], ["agent:1", "web:1"]),
    machine("m3", [], ["web:1"]),
  ]);
  const full = plan(s);
  const kept = catchUpOps(full, PROJECT, { id: "m3", name: "m3" });
  deepEqual(
    kept.map((op) => `${op.kind} ${op.service}@${op.machineName}`),
    ["image agent@m3", "create agent@m3", "image caddy@m3", "ingress caddy@m3"],
  );
  // The new agent joins the Deployment its peers run, which the Serving Pointer names: no pointer move.
  const created = kept.find((op) => op.kind === "create");
  deepEqual(created?.kind === "create" ? created.spec.deployment : undefined, D1);
  deepEqual(full.ops.some((op) => op.kind === "create" && op.service === "web"), true);
});

Deno.test("catch-up of a Global Service that never ran anywhere moves its pointer to the new Deployment", () => {
  const s = snapshot([machine("m1", [], ["agent:1", "web:1", "caddy:2"]), machine("m3", [], ["agent:1"])]);
  const kept = catchUpOps(plan(s), PROJECT, { id: "m3", name: "m3" }).filter((op) => op.project === "fleet");
  deepEqual(kept.map((op) => `${op.kind} ${op.service}@${op.machineName}`), [
    "create agent@m3",
    "point agent@m3",
  ]);
});

Deno.test("catch-up finds nothing when the joined Machine already runs every Global Service", () => {
  const s = snapshot([
    machine("m1", [container("agent", "1", "m1")], ["agent:1", "web:1", "caddy:2"]),
    machine("m3", [container("agent", "1", "m3")], ["agent:1"]),
  ]);
  const kept = catchUpOps(plan(s), PROJECT, { id: "m3", name: "m3" }).filter((op) => op.project === "fleet");
  deepEqual(kept, []);
});

const FLEET = `name: fleet
services:
  agent:
    image: app:1
    deploy: { mode: global }
  web:
    image: app:1
`;

function fleet(fakes: FakeMachine[], omitted: string[] = []) {
  const book = new FakeBook();
  book.saveState({ project: "fleet", compose: compose(FLEET), sourcePath: "fleet.yaml", savedAt: "t" });
  book.saveState({
    project: "plain",
    compose: compose("name: plain\nservices:\n  web: { image: app:1 }\n"),
    sourcePath: "p.yaml",
    savedAt: "t",
  });
  const opened = cluster(fakes, omitted);
  let opens = 0;
  const open = (): Promise<typeof opened> => {
    opens++;
    return Promise.resolve(opened);
  };
  return { book, opened, open, opens: () => opens };
}

Deno.test("catch-up places only the Global Service on the joined Machine and records the run", async () => {
  const one = new FakeMachine("m1", "one");
  const joined = new FakeMachine("m3", "three");
  const { book, opened, open } = fleet([one, joined]);
  const placing: string[] = [];
  const report = recorder();
  const results = await catchUpGlobal(book, { id: "m3", name: "three" }, {
    open,
    report,
    placing: (project, n) => placing.push(`${project} ${n}`),
  });
  deepEqual(results, [{ project: "fleet", status: "placed", detail: `1 container(s) placed on "three"` }]);
  deepEqual(placing, ["fleet 2"]);
  deepEqual(one.calls, []);
  deepEqual(joined.calls.filter((c) => c.startsWith("ensure")).map((c) => c.split(" ")[1].split("-")[1]), [
    "agent",
  ]);
  const record = book.deployments("fleet")[0];
  deepEqual([record.status, (record.outcome as Record<string, unknown>).catch_up], ["succeeded", "m3"]);
  equal(report.outcomes.length, 1);
  ok(opened.disposed, "the Machines are closed once the pass ends");
});

Deno.test("catch-up asks no Machine when no Saved State has a Global Service for the joined one", async () => {
  const book = new FakeBook();
  book.saveState({
    project: "plain",
    compose: compose("name: plain\nservices:\n  web: { image: app:1 }\n"),
    sourcePath: "p.yaml",
    savedAt: "t",
  });
  let opens = 0;
  const results = await catchUpGlobal(book, { id: "m3", name: "three" }, {
    open: () => {
      opens++;
      return Promise.reject(new Error("not asked"));
    },
    report: recorder(),
  });
  deepEqual([results, opens], [[], 0]);
});

Deno.test("catch-up says it cannot tell when the joined Machine is not observed, and when it fails", async () => {
  const one = new FakeMachine("m1", "one");
  const joined = new FakeMachine("m3", "three");
  joined.down = new CodedError("unavailable", "Docker is not answering");
  const down = fleet([one, joined]);
  deepEqual(
    await catchUpGlobal(down.book, { id: "m3", name: "three" }, { open: down.open, report: recorder() }),
    [{
      project: "fleet",
      status: "unknown",
      detail: `Machine "three" was not observed (unavailable: Docker is not answering)`,
    }],
  );
  joined.down = undefined;
  joined.failEnsure = /agent/;
  const failing = fleet([one, joined]);
  const results = await catchUpGlobal(failing.book, { id: "m3", name: "three" }, {
    open: failing.open,
    report: recorder(),
  });
  deepEqual(results.map((r) => r.status), ["failed"]);
  equal(failing.book.deployments("fleet")[0].status, "failed");
  const missing = fleet([new FakeMachine("m1", "one")], ["three"]);
  deepEqual(
    (await catchUpGlobal(missing.book, { id: "m3", name: "three" }, {
      open: missing.open,
      report: recorder(),
    }))
      .map((r) => r.detail),
    [`Machine "three" was not observed (the Entry Machine does not list it)`],
  );
});

const PINNED = `sha256:${"a".repeat(64)}`;
const MOVED = `sha256:${"b".repeat(64)}`;

/** A Saved State whose Global Service runs the digest its Deploy pinned, from registry `host`. */
function pinnedFleet(host: string, fakes: FakeMachine[]) {
  const book = new FakeBook();
  const image = `${host}/agent:1@${PINNED}`;
  book.saveState({
    project: "fleet",
    compose: compose(`name: fleet\nservices:\n  agent:\n    image: ${image}\n    deploy: { mode: global }\n`),
    sourcePath: "fleet.yaml",
    savedAt: "t",
  });
  const opened = cluster(fakes);
  return { book, image, open: () => Promise.resolve(opened) };
}

Deno.test("catch-up pulls the digest the Deploy pinned, asking the registry for that digest and never the tag", async () => {
  const one = new FakeMachine("m1", "one");
  const joined = new FakeMachine("m3", "three");
  // The tag moved since the Deploy: resolving it again would run another image on the joined Machine.
  one.registry = new Map([
    ["registry.example.com/agent:1", MOVED],
    [`registry.example.com/agent@${PINNED}`, PINNED],
  ]);
  const { book, image, open } = pinnedFleet("registry.example.com", [one, joined]);
  const results = await catchUpGlobal(book, { id: "m3", name: "three" }, {
    open,
    report: recorder(),
    registryAuth: (host) => Promise.resolve({ username: "u", password: "pw", serveraddress: host }),
  });
  deepEqual(results.map((r) => r.status), ["placed"]);
  deepEqual(one.calls.filter((c) => c.startsWith("resolve")), [
    `resolve registry.example.com/agent@${PINNED}`,
  ]);
  // The executor starts the pull task when the plan starts and the pull operation joins it: one image, asked twice.
  deepEqual([...new Set(joined.calls.filter((c) => c.startsWith("pull")))], [`pull ${image}`]);
  ok(joined.auths.includes("pw"), "the pull carried the operator's credentials");
  const created = [...joined.containers.values()].map((c) => c.image);
  deepEqual(created, [image]);
});

Deno.test("catch-up copies the pinned digest from a peer when its registry does not answer", async () => {
  const one = new FakeMachine("m1", "one");
  const joined = new FakeMachine("m3", "three");
  const { book, image, open } = pinnedFleet("registry.example.com", [one, joined]);
  one.images.add(image);
  one.registry = new CodedError("unavailable", "connection refused");
  const report = recorder();
  const results = await catchUpGlobal(book, { id: "m3", name: "three" }, { open, report });
  deepEqual(results.map((r) => r.status), ["placed"]);
  deepEqual(one.calls.filter((c) => c.startsWith("resolve")), [
    `resolve registry.example.com/agent@${PINNED}`,
  ]);
  deepEqual(joined.calls.filter((c) => c.startsWith("pull") || c.startsWith("copy")), [
    `copy ${image} from m1`,
  ]);
  const plan = report.events.find((e) => e.type === "plan");
  deepEqual(
    plan?.type === "plan"
      ? plan.ops.map((op) => `${op.kind} ${op.kind === "image" ? op.fromMachineName : ""}`)
      : [],
    ["image one", "create ", "point "],
  );
});

Deno.test("catch-up names the registry when neither it nor a peer can give the pinned digest", async () => {
  const one = new FakeMachine("m1", "one");
  const joined = new FakeMachine("m3", "three");
  const { book, open } = pinnedFleet("registry.example.com", [one, joined]);
  one.registry = new CodedError("unavailable", "connection refused");
  const results = await catchUpGlobal(book, { id: "m3", name: "three" }, { open, report: recorder() });
  deepEqual(results.map((r) => r.status), ["failed"]);
  ok(results[0].detail.includes(`registry "registry.example.com" did not answer`), results[0].detail);
  deepEqual(joined.calls, []);
});
