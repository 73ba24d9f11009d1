import assert from "node:assert/strict";
import { join } from "node:path";
import { openConfigStore, STATE_KEY_FILE } from "./config_store.ts";
import { StoreError } from "./errors.ts";
import { tempDir } from "../util/testing/mod.ts";

Deno.test("config store keeps saved state, deployments, allocations and receipts across reopen", async () => {
  await using tmp = await tempDir("config_store_");
  const dir = tmp.path;
  const path = join(dir, "config.db");
  const first = openConfigStore(path);
  first.saveState({
    project: "shop",
    compose: { services: { web: { image: "a" } } },
    sourcePath: "/x/compose.yaml",
    savedAt: "t1",
  });
  first.saveState({
    project: "shop",
    compose: { services: { web: { image: "b" } } },
    sourcePath: "/x/compose.yaml",
    savedAt: "t2",
  });
  first.saveDeployment({
    id: "d1",
    project: "shop",
    createdAt: "2026-01-01",
    status: "running",
    outcome: null,
  });
  first.saveDeployment({
    id: "d1",
    project: "shop",
    createdAt: "2026-01-01",
    status: "done",
    outcome: { m1: "ok" },
  });
  first.saveDeployment({
    id: "d2",
    project: "shop",
    createdAt: "2026-01-02",
    status: "running",
    outcome: null,
  });
  first.recordAllocation({
    subnet: "10.210.1.0/24",
    machineName: "a",
    machineId: "m1",
    state: "saved",
    savedAt: "t1",
  });
  first.recordAllocation({
    subnet: "10.210.1.0/24",
    machineName: "a",
    machineId: "m1",
    state: "published",
    savedAt: "t2",
  });
  first.saveReceipt({ requestKey: "r1", leg: "m1", receipt: { ok: true }, savedAt: "t" });
  assert.throws(
    () => first.saveReceipt({ requestKey: "", leg: "m1", receipt: {}, savedAt: "t" }),
    StoreError,
  );
  first.close();

  using store = openConfigStore(path);
  assert.deepEqual(store.savedState("shop")?.compose, { services: { web: { image: "b" } } });
  assert.equal(store.savedState("none"), undefined);
  assert.deepEqual(store.savedProjects(), ["shop"]);
  assert.deepEqual(store.deployments("shop").map((d) => [d.id, d.status]), [["d2", "running"], [
    "d1",
    "done",
  ]]);
  assert.deepEqual(store.deployment("d1")?.outcome, { m1: "ok" });
  assert.deepEqual(store.allocations("10.210.1.0/24").map((a) => a.state), ["saved", "published"]);
  assert.deepEqual(store.receipts("r1"), [{
    requestKey: "r1",
    leg: "m1",
    receipt: { ok: true },
    savedAt: "t",
  }]);
});

Deno.test("config store narrows its directory to 0700 and its files to 0600 at every open, with a warning", async () => {
  await using rootDir = await tempDir("config_store_");
  const root = rootDir.path;
  const dir = join(root, "ployz");
  const path = join(dir, "config.db");
  const warnings: string[] = [];
  const warn = (line: string): void => {
    warnings.push(line);
  };
  openConfigStore(path, { warn }).close();
  assert.deepEqual(warnings, [], "a fresh store is private from the start");
  assert.equal((await Deno.stat(dir)).mode! & 0o777, 0o700);
  for (const name of ["config.db", "config.db-wal", "config.db-shm", STATE_KEY_FILE]) {
    const stat = await Deno.stat(join(dir, name)).catch(() => undefined);
    if (stat !== undefined) assert.equal(stat.mode! & 0o777, 0o600, name);
  }
  assert.equal((await Deno.stat(join(dir, STATE_KEY_FILE))).mode! & 0o777, 0o600);

  await Deno.chmod(dir, 0o755);
  await Deno.chmod(path, 0o644);
  await Deno.chmod(join(dir, STATE_KEY_FILE), 0o640);
  const store = openConfigStore(path, { warn });
  store.close();
  assert.equal((await Deno.stat(dir)).mode! & 0o777, 0o700);
  assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
  assert.equal((await Deno.stat(join(dir, STATE_KEY_FILE))).mode! & 0o777, 0o600);
  assert.equal(warnings.length, 3, warnings.join("\n"));
  assert.match(warnings[0], /was mode 0755, readable beyond its owner; set to 0700/);
  assert.match(warnings[1], /config\.db" was mode 0644/);
});

Deno.test("Saved State keeps environment values sealed at rest and gives them back to a re-plan", async () => {
  await using tmp = await tempDir("config_store_");
  const dir = tmp.path;
  const path = join(dir, "config.db");
  const secret = "hunter2-sealed-value";
  const compose = {
    name: "shop",
    services: {
      web: { image: "web:1", environment: { TOKEN: secret, EMPTY: "" }, replicas: 2 },
      environment: { image: "odd:1", environment: { ODD: `${secret}-odd` } },
    },
    "pre_deploy": [{ service: "web", environment: { MIGRATE_TOKEN: `${secret}-hook` } }],
  };
  const store = openConfigStore(path);
  store.saveState({ project: "shop", compose, sourcePath: "/x/compose.yaml", savedAt: "t1" });
  assert.deepEqual(store.savedState("shop")?.compose, compose);
  store.close();
  for (const name of ["config.db", "config.db-wal"]) {
    const bytes = await Deno.readFile(join(dir, name)).catch(() => new Uint8Array(0));
    assert.equal(
      new TextDecoder("latin1").decode(bytes).includes(secret),
      false,
      `${name} holds the value`,
    );
  }
  const reopened = openConfigStore(path);
  assert.deepEqual(reopened.savedState("shop")?.compose, compose);
  reopened.close();

  await Deno.writeFile(join(dir, STATE_KEY_FILE), crypto.getRandomValues(new Uint8Array(32)));
  using otherKey = openConfigStore(path);
  assert.throws(
    () => otherKey.savedState("shop"),
    (error: unknown) =>
      error instanceof StoreError && error.code === "unavailable" &&
      /sealed under another state\.key; deploy the Project again/.test(error.message) &&
      !error.message.includes(secret),
  );
});

Deno.test("a Saved State written in the clear is sealed at the next open", async () => {
  await using tmp = await tempDir("config_store_");
  const dir = tmp.path;
  const path = join(dir, "config.db");
  openConfigStore(path).close();
  const { DatabaseSync } = await import("node:sqlite");
  const db = new DatabaseSync(path);
  const compose = { services: { web: { environment: { TOKEN: "plain-old-secret" } } } };
  db.prepare(`INSERT INTO saved_state (project, compose) VALUES ('shop', ?)`).run(JSON.stringify(compose));
  db.close();
  using store = openConfigStore(path);
  const raw = new DatabaseSync(path, { readOnly: true });
  const stored = String(raw.prepare(`SELECT compose FROM saved_state`).get()?.compose);
  raw.close();
  assert.equal(stored.includes("plain-old-secret"), false, stored);
  assert.deepEqual(store.savedState("shop")?.compose, compose);
});

Deno.test("contexts are saved, listed, selected and removed; removing the current one unselects it", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "config.db");
  try {
    const first = openConfigStore(path);
    first.saveContext({ name: "prod", url: "ssh://root@192.0.2.1", savedAt: "t1" });
    first.saveContext({ name: "lab", url: "unix:///run/ployz/ployz.sock", savedAt: "t2" });
    first.saveContext({ name: "prod", url: "ssh://root@192.0.2.1:2222", savedAt: "t3" });
    first.useContext("prod");
    assert.throws(() => first.saveContext({ name: "", url: "x", savedAt: "t" }), StoreError);
    first.close();
    using store = openConfigStore(path);
    assert.deepEqual(store.contexts().map((c) => [c.name, c.url]), [
      ["lab", "unix:///run/ployz/ployz.sock"],
      ["prod", "ssh://root@192.0.2.1:2222"],
    ]);
    assert.equal(store.currentContext(), "prod");
    assert.equal(store.removeContext("prod"), true);
    assert.equal(store.removeContext("prod"), false);
    assert.equal(store.currentContext(), undefined);
    assert.equal(store.context("lab")?.savedAt, "t2");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("volume runs: one open run per Volume, resumed by the same run, the next gen after it ends", async () => {
  const dir = await Deno.makeTempDir();
  const store = openConfigStore(join(dir, "config.db"));
  try {
    const first = store.openVolumeRun("db", "move", `{"to":"m2"}`, "t0");
    assert.deepEqual([first.run.gen, first.resumed], [1, false]);
    assert.deepEqual(store.openVolumeRun("db", "move", `{"to":"m2"}`, "t1").resumed, true);
    assert.throws(
      () => store.openVolumeRun("db", "sync", "{}", "t1"),
      (e: StoreError) => e.code === "conflict" && /open move run \(gen 1/.test(e.message),
    );
    store.closeVolumeRun("db", 1, "done", "m2 Writer", "t2");
    store.closeVolumeRun("db", 1, "failed", "late", "t3");
    assert.equal(store.volumeRun("db")?.state, "done", "a closed run stays closed");
    assert.equal(store.openVolumeRun("db", "sync", "{}", "t4").run.gen, 2);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
