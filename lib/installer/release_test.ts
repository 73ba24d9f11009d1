import { equal, rejects, throws } from "node:assert/strict";
import { join } from "node:path";
import { InstallError } from "./errors.ts";
import { artifactName, checkVersion, majorLine, openReleaseSource, resolveChannel } from "./release.ts";
import { tempDir } from "../util/testing/mod.ts";

Deno.test("checkVersion() accepts exact versions and refuses paths, ranges and channels", () => {
  equal(checkVersion("0.1.0"), "0.1.0");
  equal(checkVersion("1.2.3-beta.1"), "1.2.3-beta.1");
  for (const bad of ["../0.1.0", "0.1", "v0.1.0", "stable", "0.1.0/..", "0.1.0\n", "01.1.0", ""]) {
    throws(() => checkVersion(bad), InstallError, bad);
  }
  equal(majorLine("0.9.3"), "v0");
  equal(artifactName("0.1.0", "x86_64-unknown-linux-gnu"), "ployz-0.1.0-x86_64-unknown-linux-gnu.tar.gz");
});

Deno.test("a directory source resolves a channel once to the exact version it holds", async () => {
  await using baseDir = await tempDir("ployz-release-");
  const base = baseDir.path;
  await Deno.mkdir(join(base, "v0"));
  await Deno.writeTextFile(join(base, "v0", "stable"), "0.2.0\n");
  await Deno.writeTextFile(join(base, "v0", "beta"), "<html>not a version</html>");
  const source = openReleaseSource(base);
  equal(await resolveChannel(source, "v0", "stable"), "0.2.0");
  await rejects(() => resolveChannel(source, "v0", "beta"), /holds "<html>not a version/);
  await rejects(() => resolveChannel(source, "v0", "edge"), (e: InstallError) => e.code === "not_found");
  await rejects(() => resolveChannel(source, "v0", "../x"), /Invalid channel/);
  await rejects(() => source.readText(["..", "etc"]), /Invalid release path segment/);
  throws(() => openReleaseSource("relative/dir"), /absolute directory or an http/);
});
