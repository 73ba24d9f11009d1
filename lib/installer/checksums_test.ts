import { equal, rejects, throws } from "node:assert/strict";
import { join } from "node:path";
import { parseSha256Sums, verifyArtifact } from "./checksums.ts";
import { tempDir } from "../util/testing/mod.ts";

const HELLO = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"; // sha256("hello\n")

Deno.test("parseSha256Sums() reads sha256sum output and refuses malformed or duplicate lines", () => {
  const sums = parseSha256Sums(`${HELLO}  a.tar.gz\n${"0".repeat(64)} *./b.tar.gz\n\n`);
  equal(sums.get("a.tar.gz"), HELLO);
  equal(sums.get("b.tar.gz"), "0".repeat(64));
  throws(() => parseSha256Sums("nonsense a.tar.gz"), /line 1/);
  throws(() => parseSha256Sums(`${HELLO}  a\n${HELLO}  a\n`), /more than once/);
});

Deno.test("verifyArtifact() refuses a missing entry and a mismatched digest", async () => {
  await using tmp = await tempDir();
  const dir = tmp.path;
  const path = join(dir, "a.tar.gz");
  await Deno.writeTextFile(path, "hello\n");
  equal(await verifyArtifact(path, "a.tar.gz", new Map([["a.tar.gz", HELLO]])), HELLO);
  await rejects(() => verifyArtifact(path, "a.tar.gz", new Map()), /SHA256SUMS does not list it/);
  await Deno.writeTextFile(path, "hellO\n");
  await rejects(
    () => verifyArtifact(path, "a.tar.gz", new Map([["a.tar.gz", HELLO]])),
    /Refusing "a.tar.gz"/,
  );
});
