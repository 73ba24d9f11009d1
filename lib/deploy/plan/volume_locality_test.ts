import assert from "node:assert/strict";
import { CodedError } from "../../util/mod.ts";
import type { NormalizedProject } from "../compose/types.ts";
import { serviceContainerSpec } from "./container_spec.ts";
import { deployIntent } from "./intent.ts";
import { planDeploy } from "./plan.ts";
import { renderPreview } from "./preview.ts";
import { takeSnapshot } from "./snapshot.ts";
import { FakeMachine, project, service } from "./test_fake.ts";
import type { Op } from "./types.ts";
import { projectProvisionedVolumes, volumePlacement } from "./volume_locality.ts";

const D1 = "d1".padEnd(32, "0");
const D2 = "d2".padEnd(32, "0");
const MOUNT = {
  type: "volume" as const,
  source: "data",
  target: "/data",
  readOnly: false,
  noCopy: false,
  subpath: null,
};

/** `shop` with `db` mounting the Provisioned Volume `shop_data`, pinned by x-machines to `one`. */
function provisioned(fields: Parameters<typeof service>[1] = {}): NormalizedProject {
  const p = project([service("db", { mounts: [MOUNT], machines: ["one"], ...fields })]);
  p.volumes.data.sizeBytes = 64 * 2 ** 20;
  return p;
}

function two(): FakeMachine[] {
  return [new FakeMachine("m1", "one"), new FakeMachine("m2", "two")];
}

async function observe(p: NormalizedProject, machines: FakeMachine[]) {
  return await takeSnapshot(machines.map((m) => ({ id: m.id, name: m.name, api: m })), {
    project: p.name,
    images: ["img:1"],
    volumes: projectProvisionedVolumes(p),
  });
}

function where(ops: Op[]): string[] {
  return ops.map((op) => `${op.kind} ${op.service}/${op.slot}@${op.machineName}`);
}

Deno.test("volume locality: only sized, non-external named volumes are Provisioned", () => {
  const p = provisioned();
  assert.deepEqual(projectProvisionedVolumes(p), ["shop_data"]);
  p.volumes.data.sizeBytes = null;
  assert.deepEqual(projectProvisionedVolumes(p), []);
  p.volumes.data.sizeBytes = 1;
  p.volumes.data.external = true;
  assert.deepEqual(projectProvisionedVolumes(p), []);
});

Deno.test("volume locality: after a Move the unchanged file keeps the Service where the Writer is", async () => {
  const p = provisioned();
  const [m1, m2] = two();
  // What a Move leaves: m2 is the Writer and runs the source's Container (its x-machines rewritten to m2);
  // m1 keeps the reverse Mirror and no Container.
  m1.pool = [{ name: "shop_data", role: "mirror", snapshot: "g5-cut" }];
  m2.pool = [{ name: "shop_data", role: "writer", epoch: 5 }];
  const moved = { ...p.services.db, machines: ["two"] };
  m2.add(serviceContainerSpec(p, moved, { deploymentId: D1, slot: "1" }));
  const snapshot = await observe(p, [m1, m2]);
  assert.deepEqual(snapshot.machines.map((m) => m.volumes), [
    [{ name: "shop_data", role: "mirror", snapshot: "g5-cut" }],
    [{ name: "shop_data", role: "writer", epoch: 5 }],
  ]);
  const plan = planDeploy({ intent: deployIntent(p, D2), snapshot });
  assert.deepEqual(plan.ops, [], "nothing to do: the Container on m2 is up to date");
  assert.deepEqual(plan.volumePlacements, [{
    service: "db",
    volumes: ["shop_data"],
    machineId: "m2",
    machineName: "two",
    overrides: ["one"],
  }]);
  assert.match(
    renderPreview(plan),
    /Placed by Volume:\n {2}- Service "shop\/db" runs on "two", which holds the Writer of "shop_data" \(x-machines names "one"; a Volume Run moved it/,
  );

  // A changed spec replaces the Container where the Writer is, and the Machine's re-check names that Machine.
  const changed = provisioned({ environment: { MODE: "b" } });
  const replaced = planDeploy({
    intent: deployIntent(changed, D2),
    snapshot: await observe(changed, [m1, m2]),
  });
  assert.deepEqual(where(replaced.ops), ["replace db/1@two"]);
  const op = replaced.ops[0];
  assert(op.kind === "replace");
  assert.deepEqual(op.spec.placement?.machines, ["two"]);
  assert.equal(op.order, "stop-first");
});

Deno.test("volume locality: a first Deploy follows x-machines; the Writer then holds it there", async () => {
  const p = provisioned();
  const machines = two();
  const first = planDeploy({ intent: deployIntent(p, D2), snapshot: await observe(p, machines) });
  assert.deepEqual(where(first.ops), ["create db/1@one"]);
  assert.equal(first.volumePlacements, undefined);
  assert.doesNotMatch(renderPreview(first), /Placed by Volume/);

  // With the Writer on the Machine x-machines names, the decision is shown without an override.
  machines[0].pool = [{ name: "shop_data", role: "writer", epoch: 0 }];
  const again = planDeploy({ intent: deployIntent(p, D1), snapshot: await observe(p, machines) });
  assert.deepEqual(where(again.ops), ["create db/1@one"]);
  assert.deepEqual(again.volumePlacements?.map((v) => [v.machineName, v.overrides]), [["one", undefined]]);
  // No x-machines at all: the Writer alone decides, and the spec names no Machine.
  const free = provisioned({ machines: [] });
  machines[0].pool = [];
  machines[1].pool = [{ name: "shop_data", role: "writer", epoch: 3 }];
  const followed = planDeploy({ intent: deployIntent(free, D1), snapshot: await observe(free, machines) });
  assert.deepEqual(where(followed.ops), ["create db/1@two"]);
  const op = followed.ops[0];
  assert(op.kind === "create");
  assert.equal(op.spec.placement, undefined);
});

Deno.test("volume locality: every replica of the Service goes to the Writer's Machine", async () => {
  const p = provisioned({ replicas: 2, machines: [] });
  const machines = two();
  machines[1].pool = [{ name: "shop_data", role: "writer", epoch: 1 }];
  const plan = planDeploy({ intent: deployIntent(p, D2), snapshot: await observe(p, machines) });
  assert.deepEqual(where(plan.ops), ["create db/1@two", "create db/2@two"]);
});

Deno.test("volume locality: a Service whose Container runs away from the Writer is replaced onto it", async () => {
  const p = provisioned();
  const [m1, m2] = two();
  m1.add(serviceContainerSpec(p, p.services.db, { deploymentId: D1, slot: "1" }));
  m1.pool = [{ name: "shop_data", role: "mirror", snapshot: "g2-x" }];
  m2.pool = [{ name: "shop_data", role: "writer", epoch: 2 }];
  const plan = planDeploy({ intent: deployIntent(p, D2), snapshot: await observe(p, [m1, m2]) });
  assert.deepEqual(where(plan.ops), ["create db/1@two", "remove db/1@one"]);
});

Deno.test("volume locality: no single Writer is refused, naming the copies and who did not report", async () => {
  const p = provisioned();
  const [m1, m2] = two();
  m1.pool = [{ name: "shop_data", role: "writer", epoch: 1 }];
  m2.pool = [{ name: "shop_data", role: "writer", epoch: 2 }];
  let snapshot = await observe(p, [m1, m2]);
  assert.throws(() => planDeploy({ intent: deployIntent(p, D2), snapshot }), (e: CodedError) => {
    assert.equal(e.code, "conflict");
    assert.match(
      e.message,
      /"shop\/db" mounts Volume "shop_data", which has 2 Writers \(writer on "one", writer on "two"\)/,
    );
    return true;
  });

  // Mid-Move: only a Mirror at the cut; m2 did not report.
  m1.pool = [{ name: "shop_data", role: "mirror", snapshot: "g7-cut" }];
  m2.pool = new CodedError("unavailable", "pool busy");
  snapshot = await observe(p, [m1, m2]);
  assert.equal(snapshot.machines[1].volumesError, "unavailable: pool busy");
  assert.throws(() => planDeploy({ intent: deployIntent(p, D2), snapshot }), (e: CodedError) => {
    assert.equal(e.code, "conflict");
    assert.match(
      e.message,
      /no Writer among the Machines that reported \(Mirror@g7-cut on "one"; "two" did not report its Volumes \(unavailable: pool busy\)\): finish its Volume Run first \("ployz volume move shop_data --to MACHINE"\)/,
    );
    return true;
  });

  // No copy anywhere, one Machine silent: placed by x-machines, with a warning that says what it could not see.
  m1.pool = [];
  const warned = planDeploy({ intent: deployIntent(p, D2), snapshot: await observe(p, [m1, m2]) });
  assert.deepEqual(where(warned.ops), ["create db/1@one"]);
  assert(warned.warnings.some((w) => /"two" did not report its Volumes/.test(w)), warned.warnings.join("\n"));
});

Deno.test("volume locality: a daemon without Pools holds no copy; a drained Writer's Machine is refused", async () => {
  const p = provisioned({ machines: [] });
  const [m1, m2] = two();
  m1.pool = new CodedError("unsupported", "Machine does not serve ployz.machine.pool.v1");
  m2.pool = [{ name: "shop_data", role: "writer", epoch: 1 }];
  const snapshot = await observe(p, [m1, m2]);
  assert.deepEqual(snapshot.machines[0].volumes, []);
  assert.equal(volumePlacement(p, p.services.db, snapshot)?.machineName, "two");
  const drained = await observe(p, [m1, m2]);
  drained.machines[1].acceptsWorkloads = false;
  assert.throws(() => planDeploy({ intent: deployIntent(p, D2), snapshot: drained }), (e: CodedError) => {
    assert.equal(e.code, "conflict");
    assert.match(e.message, /"two" meet its placement but do not accept workloads/);
    return true;
  });
});

Deno.test("volume locality: a Global Service and a plain named volume are not pinned", async () => {
  const p = provisioned({ mode: "global", replicas: null, machines: [] });
  const machines = two();
  machines[1].pool = [{ name: "shop_data", role: "writer", epoch: 1 }];
  const snapshot = await observe(p, machines);
  assert.equal(volumePlacement(p, p.services.db, snapshot), undefined);
  const plain = provisioned({ machines: [] });
  plain.volumes.data.sizeBytes = null;
  assert.equal(volumePlacement(plain, plain.services.db, snapshot), undefined);
});
