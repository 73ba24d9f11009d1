import assert from "node:assert/strict";
import { CAPABILITIES } from "../rpc/mod.ts";
import { CodedError } from "../util/mod.ts";
import { cluster, compose, FakeBook, FakeMachine, recorder } from "./deploy_test_fake.ts";
import { deployProject } from "./deploy_flow.ts";
import { pinImages } from "./image_pins.ts";

const REG = "reg.example:5000";
/** A registry on the Cluster's own network: the plan pulls from it even where a peer holds the digest. */
const LAN = "registry.lan:5000";
const D1 = `sha256:${"1".repeat(64)}`;
const D2 = `sha256:${"2".repeat(64)}`;
const noAuth = () => Promise.resolve(undefined);

function shop(policy = "missing", image = `${REG}/shop/web:1`): ReturnType<typeof compose> {
  return compose(`name: shop
services:
  web:
    image: ${image}
    pull_policy: ${policy}
    deploy:
      replicas: 2
`);
}

Deno.test("pinImages() resolves a tag no Machine holds at the registry, once, with the operator's credentials", async () => {
  const [m1, m2] = [new FakeMachine("id1", "m1"), new FakeMachine("id2", "m2")];
  m1.registry = new Map([[`${REG}/shop/web:1`, D1]]);
  const pinned = await pinImages(
    shop(),
    cluster([m1, m2]),
    (host) =>
      Promise.resolve(host === REG ? { username: "u", password: "pw", serveraddress: host } : undefined),
  );
  assert.equal(pinned.project.services.web.image, `${REG}/shop/web:1@${D1}`);
  assert.deepEqual(pinned.sources.map((s) => [s.digest, s.from, s.registryState]), [
    [D1, `registry "${REG}"`, "available"],
  ]);
  assert.deepEqual(m1.auths, ["pw"]);
  assert.deepEqual(m2.calls, []);
});

Deno.test("pinImages() takes the digest a Machine pulled the tag by, and leaves an image no registry knows as written", async () => {
  const [m1, m2] = [new FakeMachine("id1", "m1"), new FakeMachine("id2", "m2")];
  m2.images.add(`${REG}/shop/web:1`);
  m2.repoDigests.set(`${REG}/shop/web:1`, [`${REG}/shop/web@${D2}`]);
  m1.registry = new Map([[`${REG}/shop/web:1`, D2]]);
  const pinned = await pinImages(shop(), cluster([m1, m2]), noAuth);
  assert.equal(pinned.project.services.web.image, `${REG}/shop/web:1@${D2}`);
  assert.equal(pinned.sources[0].from, 'Machine "m2"');
  assert.equal(
    pinned.sources[0].registryState,
    "available",
    "m1 lacks it: the registry was asked for the digest",
  );

  const local = await pinImages(shop("missing", "app:1"), cluster([m1, m2]), noAuth);
  assert.equal(local.project.services.web.image, "app:1");
  assert.equal(local.sources[0].registryState, "none");
});

Deno.test("pinImages() refuses by code: never with no holder, a registry that refuses, always with no fallback", async () => {
  const m1 = new FakeMachine("id1", "m1");
  await assert.rejects(pinImages(shop("never"), cluster([m1]), noAuth), (e) => {
    assert.equal((e as CodedError).code, "not_found");
    assert.match((e as Error).message, /pull_policy: never/);
    return true;
  });
  m1.registry = new CodedError(
    "unauthenticated",
    `Cannot resolve image: registry "${REG}" refused the credentials`,
  );
  await assert.rejects(pinImages(shop(), cluster([m1]), noAuth), (e) => {
    assert.equal((e as CodedError).code, "unauthenticated");
    assert.match((e as Error).message, new RegExp(`Service "web".*registry "${REG}"`));
    return true;
  });
  m1.registry = new CodedError("unavailable", `registry "${REG}" could not be reached`);
  await assert.rejects(pinImages(shop("always"), cluster([m1]), noAuth), (e) => {
    assert.equal((e as CodedError).code, "unavailable");
    return true;
  });
});

Deno.test("with the registry down, pull_policy always runs the digest a Machine holds and the plan copies it", async () => {
  const [m1, m2] = [new FakeMachine("id1", "m1"), new FakeMachine("id2", "m2")];
  m1.images.add(`${REG}/shop/web:1`);
  m1.images.add(`${REG}/shop/web:1@${D1}`);
  m1.repoDigests.set(`${REG}/shop/web:1`, [`${REG}/shop/web@${D1}`]);
  m1.registry = new CodedError("unavailable", `registry "${REG}" could not be reached`);
  const machines = cluster([m1, m2]);
  const pinned = await pinImages(shop("always"), machines, noAuth);
  assert.equal(pinned.project.services.web.image, `${REG}/shop/web:1@${D1}`);
  assert.match(pinned.warnings[0], /did not answer .* Machine "m1" holds/);
  const book = new FakeBook();
  const report = recorder();
  const result = await deployProject(machines, book, {
    project: shop("always"),
    warnings: [],
    sourcePath: "compose.yaml",
  }, { report, yes: true, dryRun: false, confirmDataLoss: [], verb: "deploy" });
  assert.equal(result.status, "ran");
  const copy = result.plan.ops.find((op) => op.kind === "image");
  assert.ok(copy?.kind === "image" && copy.machineName === "m2" && copy.fromMachineName === "m1");
  assert.match(copy.reason ?? "", /registry ".+" did not answer/);
  assert.equal(result.plan.ops.some((op) => op.kind === "pull"), false);
});

Deno.test("a Deploy pulls on each Machine that lacks the pinned image; a moved tag is a replacement", async () => {
  const [m1, m2] = [new FakeMachine("id1", "m1"), new FakeMachine("id2", "m2")];
  m1.registry = new Map([[`${REG}/shop/web:1`, D1]]);
  const machines = cluster([m1, m2]);
  const book = new FakeBook();
  const run = async (policy: string) =>
    await deployProject(machines, book, { project: shop(policy), warnings: [], sourcePath: "c.yaml" }, {
      report: recorder(),
      yes: true,
      dryRun: false,
      confirmDataLoss: [],
      verb: "deploy",
      registryAuth: (host) => Promise.resolve({ username: "u", password: "pw", serveraddress: host }),
    });
  const first = await run("always");
  assert.equal(first.status, "ran");
  assert.deepEqual(
    first.plan.ops.filter((op) => op.kind === "pull").map((op) => op.machineName).sort(),
    ["m1", "m2"],
  );
  assert.deepEqual(first.plan.images?.map((i) => `${i.written} → ${i.digest}`), [
    `${REG}/shop/web:1 → ${D1}`,
  ]);
  assert.ok(m2.auths.includes("pw"), "the pull request carried the credentials");
  assert.ok(!JSON.stringify(book.records).includes("pw"), "no Deployment record holds them");

  m1.registry = new Map([[`${REG}/shop/web:1`, D2]]);
  const moved = await run("always");
  assert.equal(moved.status, "ran");
  assert.deepEqual(moved.plan.ops.filter((op) => op.kind === "replace").length, 2);
  assert.ok(moved.plan.ops.every((op) => op.kind !== "create"));
});

Deno.test("a digest no observed Machine holds, with the registry down, is refused naming both sources", async () => {
  const m1 = new FakeMachine("id1", "m1");
  m1.registry = new CodedError("unavailable", `registry "${REG}" could not be reached`);
  const project = shop("missing", `${REG}/shop/web:1@${D1}`);
  await assert.rejects(
    deployProject(cluster([m1]), new FakeBook(), { project, warnings: [], sourcePath: "c.yaml" }, {
      report: recorder(),
      yes: true,
      dryRun: false,
      confirmDataLoss: [],
      verb: "deploy",
    }),
    (e) => {
      assert.equal((e as CodedError).code, "unavailable");
      assert.match(
        (e as Error).message,
        /registry ".+" did not answer .* and no observed Machine holds sha256:1/,
      );
      return true;
    },
  );
});

Deno.test("two Machines whose tag points at different digests both run the Entry Machine's", async () => {
  const [m1, m2] = [new FakeMachine("id1", "m1"), new FakeMachine("id2", "m2")];
  const tag = `${LAN}/shop/web:1`;
  for (const [m, d] of [[m1, D1], [m2, D2]] as const) {
    m.images.add(tag);
    m.images.add(`${tag}@${d}`);
    m.repoDigests.set(tag, [`${LAN}/shop/web@${d}`]);
  }
  // The tag has moved on in the registry; the older digest is still served by digest.
  m1.registry = new Map([[tag, D2], [`${LAN}/shop/web@${D1}`, D1]]);
  const result = await deployProject(cluster([m1, m2]), new FakeBook(), {
    project: shop("missing", tag),
    warnings: [],
    sourcePath: "c.yaml",
  }, { report: recorder(), yes: true, dryRun: false, confirmDataLoss: [], verb: "deploy" });
  assert.equal(result.status, "ran");
  const images = result.plan.ops.flatMap((op) => op.kind === "create" ? [op.spec.image] : []);
  assert.deepEqual(images, [`${tag}@${D1}`, `${tag}@${D1}`]);
  const pulls = result.plan.ops.filter((op) => op.kind === "pull");
  assert.deepEqual(pulls.map((op) => op.machineName), ["m2"]);
  assert.ok(m2.images.has(`${tag}@${D1}`));
});

Deno.test("a pull that fails mid-way fails its operation as unavailable, and a re-run finishes the Deploy", async () => {
  const [m1, m2] = [new FakeMachine("id1", "m1"), new FakeMachine("id2", "m2")];
  m1.registry = new Map([[`${LAN}/shop/web:1`, D1]]);
  m2.failPull = new CodedError(
    "unavailable",
    `Cannot pull image: registry "${LAN}" could not be reached: EOF`,
  );
  const machines = cluster([m1, m2]);
  const book = new FakeBook();
  const run = async () =>
    await deployProject(machines, book, {
      project: shop("missing", `${LAN}/shop/web:1`),
      warnings: [],
      sourcePath: "c.yaml",
    }, {
      report: recorder(),
      yes: true,
      dryRun: false,
      confirmDataLoss: [],
      verb: "deploy",
    });
  const first = await run();
  assert.ok(first.status === "ran" && first.outcome.status !== "succeeded");
  const failed = first.status === "ran" ? first.outcome.failed : undefined;
  assert.equal(failed?.op.kind, "pull");
  assert.equal(failed?.error.code, "unavailable");
  assert.match(failed?.error.message ?? "", /on Machine "m2": .*could not be reached/);
  m2.failPull = undefined;
  const second = await run();
  assert.ok(second.status === "ran" && second.outcome.status === "succeeded");
  assert.deepEqual(second.plan.ops.filter((op) => op.kind === "pull").map((op) => op.machineName), ["m2"]);
});

/** A Machine whose registry answers only once every Machine was asked for its containers (or after 2 s). */
class SlowRegistry extends FakeMachine {
  #listed: () => void = () => {};
  listedBeforeAnswer = false;
  readonly others: FakeMachine[] = [];
  override resolveImage(r: { ref: string }): Promise<{ ref: string; digest: string }> {
    const everyoneListed = (): boolean => [this, ...this.others].every((m) => m.calls.includes("list shop"));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#listed = () => {};
        super.resolveImage(r).then(resolve, reject);
      }, 2_000);
      this.#listed = () => {
        if (!everyoneListed()) return;
        clearTimeout(timer);
        this.#listed = () => {};
        this.listedBeforeAnswer = true;
        super.resolveImage(r).then(resolve, reject);
      };
      this.#listed();
    });
  }
  notifyListed(): void {
    this.#listed();
  }
}

Deno.test("a Deploy observes the Machines while the registry resolves the tag, then checks the pinned image", async () => {
  const m1 = new SlowRegistry("id1", "m1");
  const m2 = new FakeMachine("id2", "m2");
  m1.others.push(m2);
  for (const m of [m1, m2]) {
    const list = m.listContainers.bind(m);
    m.listContainers = (r) => {
      if (r.project === "shop") m.calls.push("list shop");
      m1.notifyListed();
      return list(r);
    };
  }
  m1.registry = new Map([[`${REG}/shop/web:1`, D1]]);
  const result = await deployProject(
    cluster([m1, m2]),
    new FakeBook(),
    { project: shop(), warnings: [], sourcePath: "c.yaml" },
    { report: recorder(), yes: true, dryRun: true, confirmDataLoss: [], verb: "deploy" },
  );
  assert.ok(m1.listedBeforeAnswer, "every Machine was listed before the registry answered");
  assert.deepEqual(
    result.plan.ops.filter((op) => op.kind === "pull").map((op) => op.kind === "pull" ? op.ref : ""),
    [`${REG}/shop/web:1@${D1}`, `${REG}/shop/web:1@${D1}`],
  );
});

Deno.test("with -y the pulls start before the Deployment record is written; a dry run or a question starts none", async () => {
  const run = async (yes: boolean, dryRun: boolean) => {
    const [m1, m2] = [new FakeMachine("id1", "m1"), new FakeMachine("id2", "m2")];
    m1.registry = new Map([[`${REG}/shop/web:1`, D1]]);
    const book = new FakeBook();
    const save = book.saveDeployment.bind(book);
    let atFirstRecord: string[] | undefined;
    book.saveDeployment = (record) => {
      atFirstRecord ??= [...m1.calls, ...m2.calls].filter((c) => c.startsWith("pull"));
      save(record);
    };
    const report = recorder(false);
    let atPreview: string[] = [];
    const preview = report.preview;
    report.preview = (plan) => {
      preview(plan);
      // Asked after the Preview printed: the pulls have had every chance to start by now.
      queueMicrotask(() => atPreview = [...m1.calls, ...m2.calls].filter((c) => c.startsWith("pull")));
    };
    await deployProject(cluster([m1, m2]), book, { project: shop(), warnings: [], sourcePath: "c.yaml" }, {
      report,
      yes,
      dryRun,
      confirmDataLoss: [],
      verb: "deploy",
    });
    return { atFirstRecord, atPreview };
  };
  const confirmed = await run(true, false);
  assert.deepEqual(confirmed.atFirstRecord, [`pull ${REG}/shop/web:1@${D1}`, `pull ${REG}/shop/web:1@${D1}`]);
  assert.deepEqual((await run(false, true)).atPreview, [], "a dry run pulls nothing");
  assert.deepEqual((await run(false, false)).atPreview, [], "nothing is pulled before the operator answers");
});

Deno.test("a refused image and a Machine that cannot be observed end in the refusal, not a crash", async () => {
  const m1 = new FakeMachine("id1", "m1");
  m1.missing.add(CAPABILITIES.listContainers);
  const refused = await deployProject(
    cluster([m1]),
    new FakeBook(),
    { project: shop(), warnings: [], sourcePath: "c.yaml" },
    { report: recorder(), yes: true, dryRun: false, confirmDataLoss: [], verb: "deploy" },
  ).catch((e) => e);
  assert.equal(refused?.code, "not_found", String(refused));
  assert.match(refused.message, /reg\.example:5000\/shop\/web:1/);
});

/** A Machine whose image look-ups answer only when released, and which records what the registry was asked. */
class HeldLookups extends FakeMachine {
  release: () => void = () => {};
  readonly #released = new Promise<void>((resolve) => this.release = resolve);
  asked: { ref: string; signal?: AbortSignal }[] = [];
  override async inspectImage(r: { ref: string }): ReturnType<FakeMachine["inspectImage"]> {
    this.calls.push(`inspect ${r.ref}`);
    await this.#released;
    return await super.inspectImage(r);
  }
  override resolveImage(
    r: { ref: string; auth?: { password?: string } },
    options?: { signal?: AbortSignal },
  ): Promise<{ ref: string; digest: string }> {
    this.asked.push({ ref: r.ref, signal: options?.signal });
    return super.resolveImage(r);
  }
}

Deno.test("a registry the reference names is asked while the Machines are, and withdrawn when one holds the tag", async () => {
  const cold = new HeldLookups("id1", "m1");
  cold.registry = new Map([[`${REG}/shop/web:1`, D1]]);
  const pinning = pinImages(shop(), cluster([cold]), noAuth);
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(cold.asked.map((a) => a.ref), [`${REG}/shop/web:1`], "asked before the Machines answered");
  cold.release();
  const pinned = await pinning;
  assert.equal(pinned.project.services.web.image, `${REG}/shop/web:1@${D1}`);
  assert.equal(cold.asked.length, 1, "the early answer is the one used");
  assert.equal(cold.asked[0].signal?.aborted, false);

  const warm = new HeldLookups("id1", "m1");
  warm.images.add(`${REG}/shop/web:1`);
  warm.images.add(`${REG}/shop/web:1@${D2}`);
  warm.repoDigests.set(`${REG}/shop/web:1`, [`${REG}/shop/web@${D2}`]);
  warm.registry = new Map([[`${REG}/shop/web:1`, D1]]);
  warm.release();
  const kept = await pinImages(shop(), cluster([warm]), noAuth);
  assert.equal(
    kept.project.services.web.image,
    `${REG}/shop/web:1@${D2}`,
    "the Machine's digest, not the moved tag",
  );
  assert.equal(warm.asked[0].signal?.aborted, true, "the early question was withdrawn");

  const hub = new HeldLookups("id1", "m1");
  hub.images.add("shop/web:1");
  hub.release();
  await pinImages(shop("missing", "shop/web:1"), cluster([hub]), noAuth);
  assert.deepEqual(hub.asked, [], "Docker Hub is asked only when needed");
});

Deno.test("when every Machine holds the tag by one digest, the pinned reference is not asked about again", async () => {
  const machines = [new FakeMachine("id1", "m1"), new FakeMachine("id2", "m2")];
  const asked: string[] = [];
  for (const m of machines) {
    m.images.add(`${REG}/shop/web:1`);
    m.repoDigests.set(`${REG}/shop/web:1`, [`${REG}/shop/web@${D1}`]);
    const inspect = m.inspectImage.bind(m);
    m.inspectImage = (r) => {
      asked.push(`${m.name} ${r.ref}`);
      return inspect(r);
    };
  }
  const pinned = await pinImages(shop(), cluster(machines), noAuth);
  assert.equal(pinned.project.services.web.image, `${REG}/shop/web:1@${D1}`);
  assert.equal(pinned.sources[0].registryState, "available");
  assert.deepEqual(asked.sort(), [`m1 ${REG}/shop/web:1`, `m2 ${REG}/shop/web:1`]);

  // One Machine holds the tag by another digest: the pinned reference is asked about on every Machine.
  machines[1].repoDigests.set(`${REG}/shop/web:1`, [`${REG}/shop/web@${D2}`]);
  asked.length = 0;
  await pinImages(shop(), cluster(machines), noAuth);
  assert.equal(asked.filter((a) => a.endsWith(`@${D1}`) || a.endsWith(`@${D2}`)).length, 2);
});

Deno.test("every image of a Project is asked about at once; a refusal names the first in the Project's order", async () => {
  // The Project lists its Services by name: a's image, then b's.
  const two = (first: string, second: string) =>
    compose(`name: shop
services:
  b:
    image: ${second}
  a:
    image: ${first}
`);
  const m = new HeldLookups("id1", "m1");
  m.registry = new Map([[`${REG}/shop/web:1`, D1], [`${REG}/shop/api:1`, D2]]);
  const pinning = pinImages(two(`${REG}/shop/web:1`, `${REG}/shop/api:1`), cluster([m]), noAuth);
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(
    m.calls.filter((c) => c.startsWith("inspect")).sort(),
    [`inspect ${REG}/shop/api:1`, `inspect ${REG}/shop/web:1`],
    "both asked before the Machine answered either",
  );
  m.release();
  const pinned = await pinning;
  assert.equal(pinned.project.services.a.image, `${REG}/shop/web:1@${D1}`);
  assert.equal(pinned.project.services.b.image, `${REG}/shop/api:1@${D2}`);
  assert.deepEqual(pinned.sources.map((s) => s.written), [`${REG}/shop/web:1`, `${REG}/shop/api:1`]);

  // Neither is known: the registry refuses both, and the refusal is a's.
  const none = new FakeMachine("id1", "m1");
  none.registry = new Map();
  await assert.rejects(
    pinImages(two(`${REG}/shop/web:2`, `${REG}/shop/api:2`), cluster([none]), noAuth),
    (error: CodedError) => error.code === "not_found" && error.message.includes("shop/web:2"),
  );
});
