import assert from "node:assert/strict";
import { join } from "node:path";
import { tempDir } from "../test_support.ts";
import { containerId, labels, writeConfig } from "./fixtures.ts";
import { Sampler } from "./sampler.ts";
import { diskFreeSource, SlowTick } from "./slow_tick.ts";
import { sleep } from "../../util/mod.ts";

Deno.test("a slow source that never answers is the gap timeout, and sampling rounds never wait on it", async () => {
  await using dir = await tempDir();
  let reads = 0;
  let release: (() => void) | undefined;
  const notes: string[] = [];
  const tick = new SlowTick({
    sources: [{
      metric: "disk_free",
      read: () => {
        reads++;
        if (reads > 1) return Promise.resolve(7);
        return new Promise<number>((resolve) => release = () => resolve(1));
      },
    }],
    timeoutMs: 50,
    log: (line) => notes.push(line),
  });
  await writeConfig(join(dir.path, "docker"), containerId(1), labels("api"), { running: false });
  const sampler = new Sampler({
    dockerRoot: join(dir.path, "docker"),
    procRoot: join(dir.path, "proc"),
    cgroupRoot: join(dir.path, "cgroup"),
    slow: () => tick.values(),
  });
  const ticking = tick.tick();
  // The round runs while the slow read hangs: before its timeout, the source has no value yet.
  assert.equal(sampler.sample(1000).machine["disk_free"], undefined);
  const started = performance.now();
  await ticking;
  assert.ok(performance.now() - started < 2000);
  assert.deepEqual(sampler.sample(2000).machine["disk_free"], { gap: "timeout" });
  // Still outstanding: no second reader piles up.
  await tick.tick();
  assert.equal(reads, 1);
  assert.equal(notes.length, 1);
  assert.match(notes[0], /"disk_free" did not answer within 50 ms/);
  release!();
  await sleep(0);
  await tick.tick();
  assert.equal(reads, 2);
  assert.equal(tick.values()["disk_free"], 7);
});

Deno.test("a failing slow source is source_failed; statfs of a real directory answers", async () => {
  const tick = new SlowTick({
    sources: [{ metric: "disk_free", read: () => Promise.reject(new Error("boom")) }],
    timeoutMs: 1000,
  });
  await tick.tick();
  assert.deepEqual(tick.values(), { "disk_free": { gap: "source_failed" } });
  const real = new SlowTick({ sources: [diskFreeSource(Deno.cwd())], timeoutMs: 5000 });
  await real.tick();
  const free = real.values()["disk_free"];
  assert.ok(typeof free === "number" && free > 0);
});
