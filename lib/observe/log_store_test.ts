import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { Ingester } from "./ingester.ts";
import { openLogStore } from "./log_store.ts";
import { FORMAT_VERSION } from "./schema.ts";
import { ObserveError } from "./errors.ts";
import { append, frames, makeContainer, numbered, ployzLabels, rotate, T0, tempDir } from "./test_support.ts";

const ID_A = "a".repeat(64);
const ID_B = "b".repeat(64);

Deno.test("a restarted ingester resumes from the stored cursor: no line twice, none lost", async () => {
  await using dir = await tempDir();
  const dockerRoot = join(dir.path, "docker");
  const dbPath = join(dir.path, "observe.db");
  const logDir = await makeContainer(dockerRoot, ID_A, ployzLabels("web"));
  const live = join(logDir, "container.log");
  await append(live, frames(numbered("web", 100)));

  let store = openLogStore({ path: dbPath });
  let ingester = new Ingester(store, { dockerRoot });
  await ingester.scan();
  assert.equal((await ingester.poll()).lines, 100);
  store.close();

  await append(live, frames(numbered("web", 20, T0, 100)));
  await rotate(logDir);
  await append(live, frames(numbered("web", 30, T0, 120)));

  store = openLogStore({ path: dbPath });
  ingester = new Ingester(store, { dockerRoot });
  await ingester.scan();
  assert.equal((await ingester.poll()).lines, 50);
  assert.equal((await ingester.poll()).lines, 0);
  const history = store.logHistory({ service: "web", since: 0n, limit: 1000 });
  assert.deepEqual(history.lines.map((l) => l.text), numbered("web", 150).map((e) => e.line));
  assert.equal(history.lines[0].machineId, "machine-1");
  assert.equal(history.lines[0].deployment, "dep-1");
  store.close();
});

Deno.test("history merges containers in time order; limit keeps the newest; grep and until narrow", async () => {
  await using dir = await tempDir();
  const dockerRoot = join(dir.path, "docker");
  const a = await makeContainer(dockerRoot, ID_A, ployzLabels("web", { "ployz.slot": "0" }));
  const b = await makeContainer(dockerRoot, ID_B, ployzLabels("web", { "ployz.slot": "1" }));
  // a writes at even ms, b at odd ms.
  await append(
    join(a, "container.log"),
    frames(numbered("a", 10).map((e, i) => ({ ...e, timeNano: T0 + BigInt(2 * i) * 1_000_000n }))),
  );
  await append(
    join(b, "container.log"),
    frames(
      numbered("b", 10).map((e, i) => ({
        ...e,
        stream: "stderr" as const,
        timeNano: T0 + BigInt(2 * i + 1) * 1_000_000n,
      })),
    ),
  );
  using store = disposable(openLogStore({ path: join(dir.path, "observe.db") }));
  const ingester = new Ingester(store.it, { dockerRoot });
  await ingester.scan();
  await ingester.poll();

  const all = store.it.logHistory({ project: "shop", service: "web", since: T0, limit: 100 });
  assert.equal(all.lines.length, 20);
  assert.deepEqual(all.lines.slice(0, 4).map((l) => l.text), ["a 0", "b 0", "a 1", "b 1"]);
  assert.deepEqual(all.lines.slice(0, 2).map((l) => [l.stream, l.slot]), [["stdout", "0"], ["stderr", "1"]]);
  assert.equal(all.truncated, false);

  const newest = store.it.logHistory({ service: "web", since: T0, limit: 3 });
  assert.deepEqual(newest.lines.map((l) => l.text), ["b 8", "a 9", "b 9"]);
  assert.equal(newest.truncated, true);

  const grep = store.it.logHistory({ service: "web", since: T0, limit: 100, grep: "b 1" });
  assert.deepEqual(grep.lines.map((l) => l.text), ["b 1"]);
  const until = store.it.logHistory({ service: "web", since: T0, until: T0 + 2_000_000n, limit: 100 });
  assert.deepEqual(until.lines.map((l) => l.text), ["a 0", "b 0"]);
  const one = store.it.logHistory({ container: ID_B.slice(0, 12), since: T0, limit: 2 });
  assert.deepEqual(one.lines.map((l) => l.text), ["b 8", "b 9"]);
});

Deno.test("a query for an unknown Service is empty with a note saying why", async () => {
  await using dir = await tempDir();
  using store = disposable(openLogStore({ path: join(dir.path, "observe.db") }));
  const result = store.it.logHistory({ project: "shop", service: "nope", since: 0n, limit: 10 });
  assert.deepEqual(result.lines, []);
  assert.equal(result.notes.length, 1);
  assert.match(result.notes[0], /holds no output of project "shop", service "nope"/);
});

Deno.test("a container prefix matching several containers is refused as ambiguous", async () => {
  await using dir = await tempDir();
  using store = disposable(openLogStore({ path: join(dir.path, "observe.db") }));
  store.it.upsertContainer({ ...identity(`ab${"1".repeat(62)}`) });
  store.it.upsertContainer({ ...identity(`ab${"2".repeat(62)}`) });
  assert.throws(
    () => store.it.logHistory({ container: "ab", since: 0n, limit: 10 }),
    (error: unknown) => error instanceof ObserveError && error.code === "ambiguous",
  );
});

Deno.test("a removed container's lines stay queryable, and its corrupt bytes are recorded", async () => {
  await using dir = await tempDir();
  const dockerRoot = join(dir.path, "docker");
  const logDir = await makeContainer(dockerRoot, ID_A, ployzLabels("worker"));
  await append(join(logDir, "container.log"), frames(numbered("w", 5)));
  await append(join(logDir, "container.log"), new Uint8Array([1, 2, 3, 4, 5, 6, 7]));
  await append(join(logDir, "container.log"), frames(numbered("w", 5, T0, 5)));
  using store = disposable(openLogStore({ path: join(dir.path, "observe.db") }));
  const ingester = new Ingester(store.it, { dockerRoot });
  await ingester.scan();
  await ingester.poll();
  assert.equal(store.it.containerStats(ID_A)?.corruptBytes, 7);

  await Deno.remove(join(dockerRoot, "containers", ID_A), { recursive: true });
  await ingester.scan();
  await ingester.poll();
  assert.notEqual(store.it.containerStats(ID_A)?.goneMs, undefined);
  const result = store.it.logHistory({ service: "worker", since: 0n, limit: 100 });
  assert.deepEqual(result.lines.map((l) => l.text), numbered("w", 10).map((e) => e.line));
});

Deno.test("a store of an unknown format version is deleted and started again, with one line saying so", async () => {
  await using dir = await tempDir();
  const path = join(dir.path, "observe.db");
  const seeded = openLogStore({ path });
  seeded.upsertContainer(identity(ID_A));
  seeded.close();
  const raw = new DatabaseSync(path);
  raw.exec("UPDATE meta SET value = '999' WHERE key = 'format_version'");
  raw.close();

  const said: string[] = [];
  using store = disposable(openLogStore({ path, log: (line) => said.push(line) }));
  assert.equal(said.length, 1);
  assert.match(said[0], /Deleted the Observe Store ".*observe\.db": format version "999" is unknown/);
  assert.equal(store.it.containerStats(ID_A), undefined);
  const version = store.it.database.prepare("SELECT value FROM meta WHERE key = 'format_version'").get();
  assert.equal(version?.value, FORMAT_VERSION);
});

Deno.test("a file that is not a database is an unknown format too", async () => {
  await using dir = await tempDir();
  const path = join(dir.path, "observe.db");
  await Deno.writeTextFile(path, "not sqlite at all, but long enough to look like a header".repeat(20));
  const said: string[] = [];
  using store = disposable(openLogStore({ path, log: (line) => said.push(line) }));
  assert.equal(said.length, 1);
  assert.deepEqual(store.it.presentContainers(), []);
  // The current version opens silently.
  store.it.close();
  const again = openLogStore({ path, log: (line) => said.push(line) });
  again.close();
  assert.equal(said.length, 1);
});

function identity(containerId: string): Parameters<ReturnType<typeof openLogStore>["upsertContainer"]>[0] {
  return {
    containerId,
    name: "c",
    machineId: "machine-1",
    project: "shop",
    service: "web",
    deployment: "dep-1",
    slot: "0",
  };
}

function disposable<T extends { close(): void }>(it: T): { it: T } & Disposable {
  let closed = false;
  const close = it.close.bind(it);
  it.close = () => {
    if (!closed) close();
    closed = true;
  };
  return { it, [Symbol.dispose]: () => it.close() };
}
