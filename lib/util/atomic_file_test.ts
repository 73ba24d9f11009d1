import assert from "node:assert/strict";
import { join } from "node:path";
import { readJsonIfPresent, readTextIfPresent, writeFileAtomic } from "./atomic_file.ts";
import { tempDir } from "./testing/mod.ts";

async function names(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(dir)) out.push(entry.name);
  return out;
}

Deno.test("writeFileAtomic replaces the file whole, with its mode, and leaves no temp file", async () => {
  await using tmp = await tempDir();
  const dir = tmp.path;
  const path = join(dir, "spec.json");
  await writeFileAtomic(path, "old\n");
  await writeFileAtomic(path, new TextEncoder().encode("new\n"), { mode: 0o600 });
  assert.equal(await Deno.readTextFile(path), "new\n");
  assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
  assert.deepEqual(await names(dir), ["spec.json"]);
});

Deno.test("writeFileAtomic gives the file its owner before its name, then its mode", async () => {
  await using tmp = await tempDir();
  const dir = tmp.path;
  const path = join(dir, "secret");
  const owner = { uid: Deno.uid()!, gid: Deno.gid()! };
  await writeFileAtomic(path, "s3cret", { mode: 0o440, owner });
  const stat = await Deno.stat(path);
  assert.deepEqual([stat.uid, stat.gid, stat.mode! & 0o7777], [owner.uid, owner.gid, 0o440]);
  assert.deepEqual(await names(dir), ["secret"]);
});

Deno.test("writeFileAtomic keeps the old file and removes its temp file when the rename fails", async () => {
  await using tmp = await tempDir();
  const dir = tmp.path;
  const path = join(dir, "target");
  await Deno.mkdir(path);
  await Deno.writeTextFile(join(path, "inside"), "x");
  await assert.rejects(writeFileAtomic(path, "data"));
  assert.deepEqual(await names(dir), ["target"]);
});

Deno.test("readTextIfPresent: the text, undefined for an absent file, and other failures thrown", async () => {
  await using tmp = await tempDir();
  const dir = tmp.path;
  const path = join(dir, "f.json");
  assert.equal(await readTextIfPresent(path), undefined);
  await Deno.writeTextFile(path, "{}\n");
  assert.equal(await readTextIfPresent(path), "{}\n");
  await assert.rejects(readTextIfPresent(dir), "a directory is not absent: it throws");
});

Deno.test("readJsonIfPresent: the value, undefined for an absent file, and the caller's error for text that is not JSON", async () => {
  await using tmp = await tempDir();
  const path = join(tmp.path, "f.json");
  const notJson = (error: unknown) => new Error("not JSON", { cause: error });
  assert.equal(await readJsonIfPresent(path, notJson), undefined);
  await Deno.writeTextFile(path, '{"a":1}\n');
  assert.deepEqual(await readJsonIfPresent(path, notJson), { a: 1 });
  await Deno.writeTextFile(path, "{");
  await assert.rejects(
    readJsonIfPresent(path, notJson),
    (error: Error) => error.message === "not JSON" && error.cause instanceof SyntaxError,
  );
  await assert.rejects(readJsonIfPresent(tmp.path, notJson), (error: Error) => error.message !== "not JSON");
});
