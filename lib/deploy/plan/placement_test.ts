import assert from "node:assert/strict";
import { executePlan } from "../execute/execute.ts";
import { serviceContainerSpec } from "./container_spec.ts";
import { deployIntent } from "./intent.ts";
import { registryIsNearby } from "./image_sources.ts";
import { planDeploy } from "./plan.ts";
import { takeSnapshot } from "./snapshot.ts";
import { FakeMachine, HOST_8080, project, service, snapshotOfAll } from "./test_fake.ts";
import type { NormalizedProject } from "../compose/types.ts";
import type { ImageOp, ImageSource, Op, PullOp } from "./types.ts";

const D1 = "d1".padEnd(32, "0");
const D2 = "d2".padEnd(32, "0");

function three(): FakeMachine[] {
  return [new FakeMachine("m1", "one"), new FakeMachine("m2", "two"), new FakeMachine("m3", "three")];
}

async function plan(p: NormalizedProject, machines: FakeMachine[], ingress?: string) {
  return planDeploy({
    intent: deployIntent(p, D2),
    snapshot: await snapshotOfAll(
      machines,
      p.name,
      ingress ? { project: "ployz-system", service: "caddy" } : undefined,
    ),
    serving: ingress ? { ingress: { project: "ployz-system", service: "caddy", image: ingress } } : undefined,
  });
}

function where(ops: Op[]): string[] {
  return ops.map((op) => `${op.kind} ${op.service}/${op.slot}@${op.machineName}`);
}

Deno.test("planDeploy spreads a replicated Service's slots over the Machines", async () => {
  const result = await plan(project([service("web", { replicas: 3 })]), three());
  assert.deepEqual(where(result.ops), ["create web/1@one", "create web/2@two", "create web/3@three"]);
});

Deno.test("planDeploy puts a fourth slot on a least loaded Machine and keeps slots where they run", async () => {
  const p = project([service("web", { replicas: 4 })]);
  const machines = three();
  // Slot 1 already runs on m3: it stays there; new slots fill m1 and m2 first.
  machines[2].add(serviceContainerSpec(p, p.services.web, { deploymentId: D1, slot: "1" }));
  const result = await plan(p, machines);
  assert.deepEqual(where(result.ops), ["create web/2@one", "create web/3@two", "create web/4@one"]);
});

Deno.test("planDeploy runs a Global Service once on every Machine, and x-machines narrows it", async () => {
  const global = await plan(project([service("agent", { mode: "global", replicas: null })]), three());
  assert.deepEqual(where(global.ops), ["create agent/1@one", "create agent/1@two", "create agent/1@three"]);
  const pinned = await plan(
    project([service("agent", { mode: "global", replicas: null, machines: ["two", "m3"] })]),
    three(),
  );
  assert.deepEqual(where(pinned.ops), ["create agent/1@two", "create agent/1@three"]);
  const replicated = await plan(project([service("web", { replicas: 2, machines: ["three"] })]), three());
  assert.deepEqual(where(replicated.ops), ["create web/1@three", "create web/2@three"]);
});

Deno.test("planDeploy refuses x-machines naming no observed Machine, naming the Service", async () => {
  await assert.rejects(plan(project([service("web", { machines: ["nine"] })]), three()), (e: Error) => {
    assert.match(e.message, /"shop\/web" can run on no observed Machine: x-machines names "nine"/);
    return true;
  });
});

Deno.test("planDeploy copies a missing image from a peer before the first op that needs it", async () => {
  const machines = three();
  machines[1].images.delete("img:2");
  const result = await plan(project([service("web", { replicas: 3, image: "img:2" })]), machines);
  assert.deepEqual(where(result.ops), [
    "create web/1@one",
    "image web/2@two",
    "create web/2@two",
    "create web/3@three",
  ]);
  const copy = result.ops[1] as ImageOp;
  assert.equal(copy.ref, "img:2");
  assert.equal(copy.fromMachineName, "one");
  assert.deepEqual(result.ops.map((op) => op.index), [0, 1, 2, 3]);
});

Deno.test("planDeploy refuses an image present on no observed Machine, naming it and the Machine", async () => {
  await assert.rejects(
    plan(project([service("web", { replicas: 3, image: "img:missing" })]), three()),
    (e: Error & { code?: string }) => {
      assert.equal(e.code, "not_found");
      assert.match(e.message, /Image "img:missing" is on no observed Machine: .*"shop\/web" .*Machine "one"/);
      return true;
    },
  );
});

Deno.test("planDeploy fills an ingress slot after copying the proxy image from a peer", async () => {
  const machines = three();
  machines[0].images.add("caddy:2");
  machines[2].images.add("caddy:2");
  const result = await plan(project([service("web")]), machines, "caddy:2");
  const tail = where(result.ops.filter((op) => op.project === "ployz-system"));
  assert.deepEqual(tail, [
    "ingress caddy/1@one",
    "image caddy/1@two",
    "ingress caddy/1@two",
    "ingress caddy/1@three",
  ]);
});

Deno.test("executePlan copies the image on the target Machine and stops at a failed copy", async () => {
  const machines = three();
  for (const m of machines) for (const peer of machines) if (peer !== m) m.peers.set(peer.id, peer);
  machines[1].images.delete("img:2");
  machines[2].images.delete("img:2");
  const p = project([service("web", { replicas: 3, image: "img:2" })]);
  const result = await plan(p, machines);
  // m1 loses the image after the plan: m3's copy (from m1) fails, and the rest is never attempted (in plan order,
  // so that copy starts only after m2's create completed).
  const outcome = await executePlan(result, new Map(machines.map((m) => [m.id, m])), {
    parallel: 1,
    onEvent: (e) => {
      if (e.type === "step" && e.status === "completed" && e.index === 2) machines[0].images.delete("img:2");
    },
  });
  assert.deepEqual(machines[1].calls.slice(0, 1), ["pull img:2 from m1"]);
  assert.ok(machines[1].images.has("img:2"));
  assert.equal(outcome.status, "partial");
  assert.deepEqual(where(outcome.completed), ["create web/1@one", "image web/2@two", "create web/2@two"]);
  assert.equal(outcome.failed?.op.kind, "image");
  assert.equal(outcome.failed?.error.code, "unavailable");
  assert.match(outcome.failed!.error.message, /Cannot copy image "img:2" from Machine "one" to "three"/);
  assert.deepEqual(where(outcome.notAttempted), ["create web/3@three"]);
});

Deno.test("planDeploy never puts two slots needing the same host port on one Machine", async () => {
  const port = HOST_8080;
  const p = project([service("web", { replicas: 3, ports: [port] })]);
  const machines = three();
  // Slot 1 runs on m1 and slot 2 too (placed before ports were published): slot 2 moves to a free Machine.
  const earlier = project([service("web", { replicas: 3 })]);
  machines[0].add(serviceContainerSpec(earlier, earlier.services.web, { deploymentId: D1, slot: "1" }));
  machines[0].add(serviceContainerSpec(earlier, earlier.services.web, { deploymentId: D1, slot: "2" }));
  const result = await plan(p, machines);
  const creates = where(result.ops).filter((op) => op.startsWith("create") || op.startsWith("replace"));
  const hosts = creates.map((op) => op.split("@")[1]);
  assert.equal(new Set(hosts).size, 3, creates.join(", "));
  assert.ok(
    result.warnings.some((w) => /publishes host ports: its 3 replicas run on 3 different Machines/.test(w)),
  );
  await assert.rejects(
    plan(project([service("web", { replicas: 4, ports: [port] })]), three()),
    /"shop\/web" publishes host port 8080: its 4 replicas need 4 Machines, and 3 are eligible/,
  );
  // An ephemeral host port (written without a published one) binds anywhere: no limit.
  const ephemeral = { ...port, publishedPort: 0 };
  const spread = await plan(project([service("web", { replicas: 4, ports: [ephemeral] })]), three());
  assert.equal(where(spread.ops).length, 4);
});

Deno.test("planDeploy leaves alone a Service left out by profiles, and says so", async () => {
  const p = project([service("web")]);
  const machines = three();
  const before = project([service("web"), service("debug")]);
  machines[1].add(serviceContainerSpec(before, before.services.debug, { deploymentId: D1, slot: "1" }));
  const result = await plan({ ...p, profiledOut: ["debug"] }, machines);
  assert.ok(!result.ops.some((op) => op.service === "debug"), where(result.ops).join(", "));
  assert.ok(result.warnings.some((w) => /"shop\/debug" is not in this Deploy/.test(w)));
  // Without the profile note, the same Service is obsolete and removed.
  const removed = await plan(p, machines);
  assert.ok(where(removed.ops).includes("remove debug/1@two"));
});

Deno.test("a Service others wait to complete runs to exit 0 first, once, and a failure stops its dependants", async () => {
  const migrate = service("migrate", { command: ["sh", "-c", "migrate"], restart: "unless-stopped" });
  const web = service("web", {
    dependsOn: ["migrate"],
    dependsOnConditions: { migrate: "service_completed_successfully" },
  });
  const p = project([web, migrate]);
  const machines = three();
  const first = await plan(p, machines);
  assert.deepEqual(where(first.ops), ["hook migrate/run@one", "create web/1@one"]);
  const hook = first.ops[0];
  assert.ok(hook.kind === "hook");
  assert.deepEqual(hook.spec.restart, { policy: "no" });
  const outcome = await executePlan(first, new Map(machines.map((m) => [m.id, m])), {});
  assert.equal(outcome.status, "succeeded");
  // Exited 0 with the same spec: UpToDate, it does not run again.
  const again = await planDeploy({
    intent: deployIntent(p, "d3".padEnd(32, "0")),
    snapshot: await snapshotOfAll(machines, p.name),
  });
  assert.deepEqual(where(again.ops), []);
  // A changed spec runs again; a failure leaves the dependants untouched.
  const changed = project([web, { ...migrate, command: ["sh", "-c", "migrate --v2"] }]);
  const failing = three();
  failing[0].hookExit = 3;
  const result = await plan(changed, failing);
  const failed = await executePlan(result, new Map(failing.map((m) => [m.id, m])), {});
  assert.equal(failed.status, "failed");
  assert.equal(failed.failed?.op.kind, "hook");
  assert.deepEqual(where(failed.notAttempted), ["create web/1@one"]);
});

Deno.test("planDeploy puts each container on the Docker network its Machine's record names", async () => {
  const machines = three();
  machines[0].network = "ployz-a";
  machines[1].network = "ployz-b";
  // m3's record names none (an older daemon): the plan's default.
  const p = project([service("web", { replicas: 3 })]);
  const snapshot = await takeSnapshot(machines.map((m) => ({ id: m.id, name: m.name, api: m })), {
    project: p.name,
    images: ["img:1"],
  });
  const result = planDeploy({ intent: deployIntent(p, D2), snapshot });
  assert.deepEqual(
    result.ops.map((op) => `${op.machineName}:${"spec" in op ? op.spec.network?.name : "-"}`),
    ["one:ployz-a", "two:ployz-b", "three:ployz"],
  );
});

Deno.test("planDeploy places by label constraints and refuses one that holds nowhere, naming it", async () => {
  const machines = three();
  machines[0].labels = { region: "eu" };
  machines[2].labels = { region: "eu" };
  const p = project([service("web", { replicas: 2, constraints: ["node.labels.region == eu"] })]);
  assert.deepEqual(where((await plan(p, machines)).ops), ["create web/1@one", "create web/2@three"]);
  const not = project([service("web", { replicas: 2, constraints: ["node.hostname != two"] })]);
  assert.deepEqual(where((await plan(not, machines)).ops), ["create web/1@one", "create web/2@three"]);
  const us = project([service("web", { constraints: ["node.labels.region == us"] })]);
  await assert.rejects(plan(us, machines), (e: Error) => {
    assert.match(
      e.message,
      /"shop\/web" can run on no observed Machine: "one": constraint "node.labels.region == us"/,
    );
    return true;
  });
});

Deno.test("planDeploy moves replicated slots off a Machine refusing workloads and keeps its Global slot", async () => {
  const p = project([service("web", { replicas: 3 }), service("agent", { mode: "global", replicas: null })]);
  const machines = three();
  for (const [i, m] of machines.entries()) {
    m.add(serviceContainerSpec(p, p.services.web, { deploymentId: D1, slot: String(i + 1) }));
    m.add(serviceContainerSpec(p, p.services.agent, { deploymentId: D1, slot: "1" }));
  }
  machines[1].acceptsWorkloads = false;
  const result = await plan(p, machines);
  // The moved slot starts elsewhere first; the old one is removed after.
  assert.deepEqual(where(result.ops), ["create web/2@three", "remove web/2@two"]);
  const removal = result.ops.find((op) => op.kind === "remove");
  assert.equal(removal?.kind === "remove" ? removal.reason : "", "ineligible");
  assert.ok(
    result.warnings.some((w) => /keeps its container on "two", which does not accept workloads/.test(w)),
  );
  for (const m of machines) m.acceptsWorkloads = false;
  await assert.rejects(plan(p, machines), /do not accept workloads/);
});

Deno.test("registryIsNearby: private, loopback, documentation and local names are nearby; public ones remote", () => {
  for (
    const host of [
      "localhost:5000",
      "127.0.0.1:5000",
      "10.1.2.3",
      "172.20.0.1:443",
      "192.168.1.10:5000",
      "192.0.2.1:32000",
      "100.100.1.1",
      "[::1]:5000",
      "[fd00::1]:5000",
      "registry:5000",
      "reg.internal",
      "cache.lan:5000",
    ]
  ) assert.equal(registryIsNearby(host), true, host);
  for (
    const host of [
      "docker.io",
      "ghcr.io",
      "registry.example.com:5000",
      "8.8.8.8",
      "172.32.0.1",
      "[2001:db8::1]:443",
    ]
  ) assert.equal(registryIsNearby(host), false, host);
});

Deno.test("planDeploy copies a pinned image from a peer when its registry is remote, pulls when it is nearby", async () => {
  const digest = `sha256:${"a".repeat(64)}`;
  const planFrom = async (registry: string, state: ImageSource["registryState"]) => {
    const ref = `${registry}/shop/web:1@${digest}`;
    const machines = three();
    machines[0].images.add(ref);
    const p = project([service("web", { replicas: 3, image: ref })]);
    const source: ImageSource = {
      written: `${registry}/shop/web:1`,
      ref,
      digest,
      from: `registry "${registry}"`,
      registry,
      registryState: state,
      ...(state === "unreachable" ? { registryMessage: "connection refused" } : {}),
      services: ["web"],
    };
    return planDeploy({
      intent: deployIntent(p, D2),
      snapshot: await snapshotOfAll(machines, p.name),
      images: [source],
    }).ops.filter((op) => op.kind === "pull" || op.kind === "image");
  };
  const remote = await planFrom("ghcr.io", "available");
  assert.deepEqual(remote.map((op) => `${op.kind}@${op.machineName}`), ["image@two", "image@three"]);
  assert.equal((remote[0] as ImageOp).fromMachineName, "one");
  assert.match(
    (remote[0] as ImageOp).reason ?? "",
    /"one" holds sha256:aaaaaaaaaaaa… and registry "ghcr\.io" is remote: the mesh copy spares/,
  );
  const nearby = await planFrom("10.0.0.5:5000", "available");
  assert.deepEqual(nearby.map((op) => `${op.kind}@${op.machineName}`), ["pull@two", "pull@three"]);
  assert.match(
    (nearby[0] as PullOp).reason,
    /is on the Cluster's own network: a pull fetches only the layers/,
  );
  const down = await planFrom("10.0.0.5:5000", "unreachable");
  assert.deepEqual(down.map((op) => `${op.kind}@${op.machineName}`), ["image@two", "image@three"]);
  assert.match((down[0] as ImageOp).reason ?? "", /did not answer \(connection refused\)/);
});
