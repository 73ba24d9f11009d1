import assert from "node:assert/strict";
import { join } from "node:path";
import type { Engine, PullProgress } from "../deploy/mod.ts";
import { CodedError, sleep } from "../util/mod.ts";
import { localImage, PulledImages, PullTasks } from "./image_pulls.ts";
import { tempDir } from "../util/testing/mod.ts";

const REF = `reg.example/app:1@sha256:${"a".repeat(64)}`;
const ID = `sha256:${"b".repeat(64)}`;

/** An Engine whose pull finishes when `release` is called, counting pulls. */
function fakeEngine(): {
  engine: Engine;
  pulls: number;
  release: (error?: Error) => void;
  images: Set<string>;
} {
  const images = new Set<string>();
  let done: (error?: Error) => void = () => {};
  const state = {
    pulls: 0,
    images,
    release: (error?: Error) => done(error),
    engine: {
      imageExists: (ref: string) => Promise.resolve(images.has(ref)),
      imageId: (ref: string) => Promise.resolve(images.has(ref) ? ID : undefined),
      inspectImage: (ref: string) =>
        Promise.resolve(
          images.has(ref) || ref === ID && images.size > 0 ? { Id: ID, RepoDigests: [] } : undefined,
        ),
      tagImage: () => Promise.resolve(),
      pullImage: (ref: string, o: { onProgress?: (p: PullProgress) => void }) => {
        state.pulls++;
        o.onProgress?.({ layers: 2, layersDone: 1, bytes: 5, bytesTotal: 10 });
        return new Promise<PullProgress>((resolve, reject) => {
          done = (error) => {
            if (error !== undefined) return reject(error);
            images.add(ref);
            resolve({ layers: 2, layersDone: 2, bytes: 10, bytesTotal: 10 });
          };
        });
      },
    } as unknown as Engine,
  };
  return state;
}

Deno.test("a pull is one task however many ask; it answers progress, then done, then present", async () => {
  await using tmp = await tempDir();
  const dir = tmp.path;
  const fake = fakeEngine();
  const pulled = new PulledImages(join(dir, "pulled_images.json"));
  const tasks = new PullTasks({
    engine: fake.engine,
    machineId: () => "m1",
    pulled,
    stopping: new AbortController().signal,
    log: () => {},
  });
  const signal = new AbortController().signal;
  const [a, b] = await Promise.all([
    tasks.pull(REF, undefined, 20, signal),
    tasks.pull(REF, undefined, 20, signal),
  ]);
  assert.equal(fake.pulls, 1);
  assert.deepEqual([a.state, b.state], ["running", "running"]);
  assert.equal(a.layers_done, 1);
  const waiting = tasks.pull(REF, undefined, 5_000, signal);
  fake.release();
  assert.equal((await waiting).state, "done");
  assert.equal((await tasks.pull(REF, undefined, 0, signal)).state, "present");
  assert.equal(fake.pulls, 1);
  await tasks.recorded();
  assert.ok((await pulled.ids()).has(ID), "recorded as Ployz's");
  const again = JSON.parse(await Deno.readTextFile(join(dir, "pulled_images.json")));
  assert.deepEqual(again.ids, [ID]);
  assert.equal((await Deno.stat(join(dir, "pulled_images.json"))).mode! & 0o777, 0o600);
});

Deno.test("a failed pull answers its code once; the next ask starts it again", async () => {
  await using tmp = await tempDir();
  const dir = tmp.path;
  const fake = fakeEngine();
  const tasks = new PullTasks({
    engine: fake.engine,
    machineId: () => "m1",
    pulled: new PulledImages(join(dir, "p.json")),
    stopping: new AbortController().signal,
    log: () => {},
  });
  const signal = new AbortController().signal;
  const first = tasks.pull(REF, undefined, 5_000, signal);
  await sleep(20);
  fake.release(new CodedError("unavailable", 'registry "reg.example" could not be reached'));
  const failed = await first;
  assert.equal(failed.state, "failed");
  assert.deepEqual(failed.error, {
    code: "unavailable",
    message: 'registry "reg.example" could not be reached',
  });
  const retry = tasks.pull(REF, undefined, 5_000, signal);
  await sleep(20);
  fake.release();
  assert.equal((await retry).state, "done");
  assert.equal(fake.pulls, 2);
  await tasks.recorded();
});

Deno.test("a pinned reference copied from a peer is found through its alias, with its digest", async () => {
  await using tmp = await tempDir();
  const dir = tmp.path;
  const fake = fakeEngine();
  fake.images.add(ID);
  const pulled = new PulledImages(join(dir, "p.json"));
  assert.equal(await localImage(fake.engine, pulled, REF), undefined);
  await pulled.add(ID, REF);
  const found = await localImage(fake.engine, new PulledImages(join(dir, "p.json")), REF);
  assert.deepEqual(found, {
    id: ID,
    dockerRef: ID,
    repoDigests: [`reg.example/app@sha256:${"a".repeat(64)}`],
  });
});

Deno.test("a pull answers done once Docker holds the image; recording it as Ployz's follows beside the answer", async () => {
  await using tmp = await tempDir();
  const dir = tmp.path;
  const fake = fakeEngine();
  let unblock: () => void = () => {};
  const blocked = new Promise<void>((resolve) => unblock = resolve);
  /** A record whose durable write waits until released (a slow disk). */
  class SlowRecord extends PulledImages {
    override async add(id: string, ref?: string): Promise<void> {
      await blocked;
      await super.add(id, ref);
    }
  }
  const pulled = new SlowRecord(join(dir, "p.json"));
  const lines: string[] = [];
  const tasks = new PullTasks({
    engine: fake.engine,
    machineId: () => "m1",
    pulled,
    stopping: new AbortController().signal,
    log: (line) => lines.push(line),
  });
  const signal = new AbortController().signal;
  assert.equal((await tasks.pull(REF, undefined, 20, signal)).state, "running");
  const waiting = tasks.pull(REF, undefined, 5_000, signal);
  fake.release();
  assert.equal((await waiting).state, "done");
  assert.equal((await pulled.ids()).has(ID), false, "not recorded yet");
  unblock();
  await tasks.recorded();
  assert.ok((await pulled.ids()).has(ID));
  assert.match(lines.join("\n"), /pulled image ".*": 2 layers, 10 bytes in \d+ ms, recorded and tagged in/);
});
