import assert from "node:assert/strict";
import { join } from "node:path";
import tarModule from "tar-stream";
import type { NormalizedBuild } from "../deploy/mod.ts";
import { buildOf } from "../deploy/testing/mod.ts";
import { buildTag, discardContext, packContext, type PackedContext } from "./build_context.ts";
import { OperatorError } from "./errors.ts";

/** The names in a packed context, read back with tar-stream's extractor. */
async function namesIn(packed: PackedContext): Promise<string[]> {
  const extract = (tarModule as unknown as {
    extract(): {
      on(event: string, listener: (...args: never[]) => void): void;
      end(data: Uint8Array): void;
    };
  }).extract();
  const names: string[] = [];
  const done = new Promise<void>((resolve, reject) => {
    extract.on(
      "entry",
      (
        header: { name: string },
        stream: { resume(): void; on(e: string, f: () => void): void },
        next: () => void,
      ) => {
        names.push(header.name);
        stream.on("end", next);
        stream.resume();
      },
    );
    extract.on("finish", resolve);
    extract.on("error", reject);
  });
  await packed.file.seek(0, Deno.SeekMode.Start);
  const bytes = new Uint8Array(packed.bytes);
  for (let at = 0; at < bytes.length;) at += (await packed.file.read(bytes.subarray(at))) ?? bytes.length;
  extract.end(bytes);
  await done;
  return names;
}

/** Temporary context files left in the temporary directory. */
async function leftovers(): Promise<number> {
  let count = 0;
  for await (const entry of Deno.readDir(Deno.env.get("TMPDIR") ?? "/tmp")) {
    if (entry.name.startsWith("ployz-build-")) count++;
  }
  return count;
}

async function fixture(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "ployz-ctx-" });
  await Deno.writeTextFile(join(dir, "Dockerfile"), "FROM ployz-test/busybox:1\nCOPY . /app\n");
  await Deno.writeTextFile(join(dir, ".dockerignore"), "node_modules\n*.log\n!keep.log\nDockerfile\n");
  await Deno.mkdir(join(dir, "node_modules/dep"), { recursive: true });
  await Deno.writeTextFile(join(dir, "node_modules/dep/index.js"), "x".repeat(10_000));
  await Deno.writeTextFile(join(dir, "debug.log"), "noise");
  await Deno.writeTextFile(join(dir, "keep.log"), "kept");
  await Deno.mkdir(join(dir, "src"));
  await Deno.writeTextFile(join(dir, "src/app.sh"), "echo hello\n");
  return dir;
}

Deno.test("packContext() honours .dockerignore, exceptions included, and always sends the Dockerfile", async () => {
  const dir = await fixture();
  try {
    const before = await leftovers();
    const packed = await packContext(buildOf(dir));
    try {
      assert.equal(await leftovers(), before, "the tar's file has no name: a killed CLI leaves nothing");
      assert.equal((await packed.file.stat()).size, packed.bytes);
      assert.equal((await packed.file.stat()).mode! & 0o777, 0o600);
      assert.deepEqual(await namesIn(packed), [
        ".dockerignore",
        "Dockerfile",
        "keep.log",
        "src",
        "src/app.sh",
      ]);
      assert.equal(packed.entries, 5);
      assert.equal(packed.ignored, 2);
      assert.match(packed.digest, /^[0-9a-f]{64}$/);
      assert.equal(buildTag(packed.digest), packed.digest.slice(0, 16));
    } finally {
      await discardContext(packed);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("packContext()'s digest follows content and build inputs, not mtimes or ignored files", async () => {
  const dir = await fixture();
  const digestOf = async (extra: Partial<NormalizedBuild> = {}): Promise<string> => {
    const packed = await packContext(buildOf(dir, extra));
    await discardContext(packed);
    return packed.digest;
  };
  try {
    const first = await digestOf();
    assert.equal(await digestOf(), first, "same context, same digest");
    await Deno.utime(join(dir, "src/app.sh"), 1, 1);
    assert.equal(await digestOf(), first, "a touched file keeps the digest");
    await Deno.writeTextFile(join(dir, "debug.log"), "more noise");
    assert.equal(await digestOf(), first, "an ignored file keeps the digest");
    assert.notEqual(await digestOf({ args: { A: "1" } }), first, "an argument changes it");
    assert.notEqual(await digestOf({ target: "runtime" }), first, "a target changes it");
    assert.equal(await digestOf({ noCache: true, cacheFrom: ["x:1"] }), first, "cache settings do not");
    await Deno.writeTextFile(join(dir, "src/app.sh"), "echo changed\n");
    assert.notEqual(await digestOf(), first, "an edited file changes it");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("packContext() adds an inline Dockerfile and refuses a missing context, Dockerfile or an oversize one", async () => {
  const dir = await fixture();
  try {
    const inline = await packContext(buildOf(dir, { dockerfileInline: "FROM ployz-test/busybox:1\n" }));
    try {
      assert.ok((await namesIn(inline)).includes(".ployz-inline.Dockerfile"));
    } finally {
      await discardContext(inline);
    }
    await assert.rejects(
      () => packContext(buildOf(join(dir, "nope"))),
      (e: unknown) =>
        e instanceof OperatorError && e.code === "invalid_argument" && /does not exist/.test(e.message),
    );
    await assert.rejects(
      () => packContext(buildOf(dir, { dockerfile: "Missing.Dockerfile" })),
      /Dockerfile ".*Missing.Dockerfile" does not exist/,
    );
    const before = await leftovers();
    await assert.rejects(
      () => packContext(buildOf(dir), { maxBytes: 4096, maxEntries: 1000 }),
      /is over the limit of 4096 bytes: with ".+" .*it holds at least \d+ bytes; list what the image does not need in its \.dockerignore/,
    );
    await assert.rejects(
      () => packContext(buildOf(dir), { maxBytes: 1 << 30, maxEntries: 2 }),
      /more than 2 files/,
    );
    const after = await leftovers();
    assert.equal(after, before, "a refused context leaves no temporary file");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
