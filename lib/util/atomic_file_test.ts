import assert from "node:assert/strict";
import { join } from "node:path";
import { readTextIfPresent, writeFileAtomic } from "./atomic_file.ts";

async function names(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(dir)) out.push(entry.name);
  return out;
}

Deno.test("writeFileAtomic replaces the file whole, with its mode, and leaves no temp file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "spec.json");
    await writeFileAtomic(path, "old\n");
    await writeFileAtomic(path, new TextEncoder().encode("new\n"), { mode: 0o600 });
    assert.equal(await Deno.readTextFile(path), "new\n");
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
    assert.deepEqual(await names(dir), ["spec.json"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("writeFileAtomic gives the file its owner before its name, then its mode", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "secret");
    const owner = { uid: Deno.uid()!, gid: Deno.gid()! };
    await writeFileAtomic(path, "s3cret", { mode: 0o440, owner });
    const stat = await Deno.stat(path);
    assert.deepEqual([stat.uid, stat.gid, stat.mode! & 0o7777], [owner.uid, owner.gid, 0o440]);
    assert.deepEqual(await names(dir), ["secret"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("writeFileAtomic keeps the old file and removes its temp file when the rename fails", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "target");
    await Deno.mkdir(path);
    await Deno.writeTextFile(join(path, "inside"), "x");
    await assert.rejects(writeFileAtomic(path, "data"));
    assert.deepEqual(await names(dir), ["target"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("readTextIfPresent: the text, undefined for an absent file, and other failures thrown", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "f.json");
    assert.equal(await readTextIfPresent(path), undefined);
    await Deno.writeTextFile(path, "{}\n");
    assert.equal(await readTextIfPresent(path), "{}\n");
    await assert.rejects(readTextIfPresent(dir), "a directory is not absent: it throws");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
