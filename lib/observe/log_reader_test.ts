import assert from "node:assert/strict";
import { join } from "node:path";
import { type LogBatch, type LogCursor, readLogBatches } from "./log_reader.ts";
import { append, frames, numbered, rotate, tempDir } from "./test_support.ts";

const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

interface Read {
  lines: string[];
  corrupt: number;
  gaps: number;
  cursor: LogCursor | undefined;
}

async function readAll(logDir: string, cursor: LogCursor | undefined, chunkBytes?: number): Promise<Read> {
  const out: Read = { lines: [], corrupt: 0, gaps: 0, cursor };
  for await (const batch of readLogBatches(logDir, cursor, { chunkBytes, maxFrameBytes: 4096 })) {
    collect(out, batch);
  }
  return out;
}

function collect(out: Read, batch: LogBatch): void {
  out.lines.push(...batch.entries.map((e) => text(e.line)));
  out.corrupt += batch.corruptBytes;
  out.gaps += batch.gap ? 1 : 0;
  out.cursor = batch.cursor;
}

/** A log directory in a fresh temporary directory, its live file, and a writer of numbered lines to that file. */
async function logDir(): Promise<
  & { path: string; live: string; write: (...lines: Parameters<typeof numbered>) => Promise<void> }
  & AsyncDisposable
> {
  const dir = await tempDir();
  const live = join(dir.path, "container.log");
  return { ...dir, live, write: (...lines) => append(live, frames(numbered(...lines))) };
}

Deno.test("readLogBatches resumes from a cursor with no line twice and none lost", async () => {
  await using log = await logDir();
  await log.write("a", 50);
  const first = await readAll(log.path, undefined, 4096 + 8);
  assert.equal(first.lines.length, 50);
  await log.write("a", 30, undefined, 50);
  const second = await readAll(log.path, first.cursor);
  assert.deepEqual([...first.lines, ...second.lines], numbered("a", 80).map((e) => e.line));
  const third = await readAll(log.path, second.cursor);
  assert.deepEqual(third.lines, []);
});

Deno.test("readLogBatches follows rotation: finishes the rotated file, then reads the new one from its start", async () => {
  await using log = await logDir();
  await log.write("a", 10);
  const first = await readAll(log.path, undefined);
  await log.write("a", 5, undefined, 10);
  await rotate(log.path);
  await log.write("a", 7, undefined, 15);
  const second = await readAll(log.path, first.cursor);
  assert.deepEqual([...first.lines, ...second.lines], numbered("a", 22).map((e) => e.line));
  assert.equal(second.corrupt, 0);
  assert.equal(second.gaps, 0);
});

Deno.test("readLogBatches reads several rotations in order, and reports a gap when its file rotated away", async () => {
  await using log = await logDir();
  await log.write("a", 3);
  const first = await readAll(log.path, undefined);
  for (let r = 1; r <= 2; r++) {
    await rotate(log.path, 5);
    await log.write("a", 3, undefined, 3 * r);
  }
  const second = await readAll(log.path, first.cursor);
  assert.deepEqual(second.lines, numbered("a", 6, undefined, 3).map((e) => e.line));

  // With max-file 2 (live + .1), rotate twice before reading: the cursor's file is gone.
  await Deno.remove(join(log.path, "container.log.2"));
  for (let r = 3; r <= 5; r++) {
    await rotate(log.path, 2);
    await log.write("a", 3, undefined, 3 * r);
  }
  const third = await readAll(log.path, second.cursor);
  assert.equal(third.gaps, 1);
  assert.deepEqual(third.lines, numbered("a", 6, undefined, 12).map((e) => e.line));
});

Deno.test("a truncated last frame in the live file waits, and counts as corrupt only once rotated past", async () => {
  await using log = await logDir();
  const tail = frames(numbered("b", 1));
  await log.write("a", 4);
  await append(log.live, tail.subarray(0, 10));
  const first = await readAll(log.path, undefined);
  assert.equal(first.lines.length, 4);
  assert.equal(first.corrupt, 0);

  // The writer finishes the frame: it is read whole.
  await append(log.live, tail.subarray(10));
  const second = await readAll(log.path, first.cursor);
  assert.deepEqual(second.lines, ["b 0"]);

  // A frame cut short and then rotated away is proven stale: its bytes are corrupt.
  await append(log.live, tail.subarray(0, 10));
  const third = await readAll(log.path, second.cursor);
  assert.equal(third.corrupt, 0);
  await rotate(log.path);
  await log.write("c", 2);
  const fourth = await readAll(log.path, third.cursor);
  assert.equal(fourth.corrupt, 10);
  assert.deepEqual(fourth.lines, ["c 0", "c 1"]);
});

Deno.test("readLogBatches reads across chunk boundaries and tells a reused inode apart by its first bytes", async () => {
  await using log = await logDir();
  await log.write("a", 400);
  const first = await readAll(log.path, undefined, 4096 + 8);
  assert.equal(first.lines.length, 400);
  // Same inode, other contents (a truncate-and-rewrite): the head no longer matches, so it reads from the start.
  await Deno.writeFile(log.live, frames(numbered("z", 500)));
  const second = await readAll(log.path, first.cursor);
  assert.equal(second.lines.length, 500);
  assert.equal(second.lines[0], "z 0");
});

Deno.test("a container removed while being read: the open file is finished, later reads find nothing", async () => {
  await using dir = await tempDir();
  const logDir = join(dir.path, "c1", "local-logs");
  await Deno.mkdir(logDir, { recursive: true });
  await append(join(logDir, "container.log"), frames(numbered("a", 300)));
  const out: Read = { lines: [], corrupt: 0, gaps: 0, cursor: undefined };
  let removed = false;
  for await (const batch of readLogBatches(logDir, undefined, { chunkBytes: 1, maxFrameBytes: 1024 })) {
    collect(out, batch);
    if (!removed) {
      await Deno.remove(join(dir.path, "c1"), { recursive: true });
      removed = true;
    }
  }
  assert.equal(out.lines.length, 300);
  assert.equal(out.corrupt, 0);
  const after = await readAll(logDir, out.cursor);
  assert.deepEqual(after.lines, []);
});
