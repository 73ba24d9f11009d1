// `deno task dist` for this machine's target: a checksummed tree that runs offline, SHA256SUMS signed (with the
// test key when no release key is given), and a plain statement of why no compiled binary was made when denort
// is missing; the macOS operator-CLI trees (contents, checksums, launcher shape: no Mac here to run them); and
// `install.sh --cli` putting only the CLI into a user's prefix.
import { deepEqual, equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import { PLOYZ_VERSION } from "../lib/cli/mod.ts";
import { SIGNATURE_FILE, verifySumsSignature } from "../lib/installer/mod.ts";
import { TEST_RELEASE_PUBLIC_KEY } from "../tools/release_test_key.ts";
import { hostDistBuild, runDist } from "./support/installer.ts";
import { ROOT, run, type RunResult } from "./support/spawn.ts";

// This host's dist, built once for the file (or once for the whole run, by the end-to-end runner): the tree test and
// the install.sh --cli test read the same one, laid out as a release source (`<base>/releases/<version>/`, a link
// to the runner's build when there is one); removed when the file's tests end.
let hostRelease: Promise<{ base: string; out: string; result: RunResult }> | undefined;

function hostReleaseOnce(): Promise<{ base: string; out: string; result: RunResult }> {
  hostRelease ??= (async () => {
    const base = await Deno.makeTempDir({ prefix: "ployz-dist-" });
    globalThis.addEventListener("unload", () => Deno.removeSync(base, { recursive: true }));
    await Deno.chmod(base, 0o755);
    const out = join(base, "releases", PLOYZ_VERSION);
    const built = await hostDistBuild(out);
    if (built.out !== out) {
      await Deno.mkdir(join(base, "releases"), { mode: 0o755 });
      await Deno.symlink(built.out, out);
    }
    return { base, out, result: built.result };
  })();
  return hostRelease;
}

Deno.test("dist builds a checksummed offline tree and says plainly why nothing was compiled", async () => {
  const { out, result } = await hostReleaseOnce();
  match(
    result.stdout,
    // The unpacked tree's bin/ployz runs the CLI bundle and its bin/ployzd serve the daemon bundle (tools/dist.ts).
    /verified ployz-[\d.]+-x86_64-unknown-linux-gnu\.tar\.gz runs offline from a fresh directory, CLI and daemon bundled/,
  );
  const compiled = await Array.fromAsync(Deno.readDir(join(out, "bin"))).catch(() => []);
  if (compiled.length === 0) {
    match(
      result.stdout,
      /no compiled binary for x86_64-unknown-linux-gnu: deno compile needs the denort runtime, looked for .*"[^"]+denort-x86_64-unknown-linux-gnu\.zip"/,
    );
  }
  const sums = await Deno.readTextFile(join(out, "SHA256SUMS"));
  match(sums, /^[0-9a-f]{64} {2}ployz-[\d.]+-x86_64-unknown-linux-gnu\.tar\.gz$/m);
  const check = await new Deno.Command("sha256sum", {
    args: ["-c", "SHA256SUMS"],
    cwd: out,
    stdout: "piped",
  }).output();
  ok(check.success, new TextDecoder().decode(check.stdout));
  match(result.stdout, /SHA256SUMS\.sig signed with the TEST key/);
  verifySumsSignature(
    PLOYZ_VERSION,
    await Deno.readFile(join(out, "SHA256SUMS")),
    await Deno.readTextFile(join(out, SIGNATURE_FILE)),
    Uint8Array.from(atob(TEST_RELEASE_PUBLIC_KEY), (c) => c.charCodeAt(0)),
  );
});

Deno.test("dist builds checksummed macOS CLI trees: a Mach-O deno, bin/ployz only, the same launcher", async () => {
  const out = await Deno.makeTempDir({ prefix: "ployz-dist-cli-" });
  try {
    await runDist(out, "aarch64-apple-darwin,x86_64-apple-darwin");
    const sums = await Deno.readTextFile(join(out, "SHA256SUMS"));
    for (const triple of ["aarch64-apple-darwin", "x86_64-apple-darwin"]) {
      match(sums, new RegExp(`^[0-9a-f]{64} {2}ployz-cli-[\\d.]+-${triple}\\.tar\\.gz$`, "m"));
      const tree = (await Array.fromAsync(Deno.readDir(out))).find((e) =>
        e.isDirectory && e.name.startsWith("ployz-cli-") && e.name.endsWith(triple)
      );
      ok(tree !== undefined, `a tree for ${triple}`);
      const root = join(out, tree.name);
      // 0xfeedfacf little-endian: a 64-bit Mach-O executable, the deno of @deno/darwin-*.
      const magic = (await Deno.readFile(join(root, "deno"))).slice(0, 4);
      deepEqual([...magic], [0xcf, 0xfa, 0xed, 0xfe], `${triple}: deno is a 64-bit Mach-O`);
      ok(((await Deno.stat(join(root, "deno"))).mode! & 0o111) !== 0, "deno is executable");
      deepEqual((await Array.fromAsync(Deno.readDir(join(root, "bin")))).map((e) => e.name).sort(), [
        "_launch.sh",
        "ployz",
      ]);
      equal(
        await Deno.readTextFile(join(root, "bin", "ployz")),
        await Deno.readTextFile(join(ROOT, "bin", "ployz")),
      );
      // The launcher's shape: it runs the tree's own deno on the bundled CLI under the cli permission set.
      const printed = await run(join(root, "bin", "ployz"), ["ps"], { PLOYZ_LAUNCHER_PRINT: "1" });
      equal(printed.code, 0, printed.stderr);
      equal(
        printed.stdout.trim().split("\n").join(" "),
        `${root}/deno run --quiet --no-prompt --cached-only --frozen --config ${root}/deno.json -P=cli ` +
          `${root}/dist/bundle/ployz.js ps`,
      );
      ok(
        await Deno.stat(join(root, "node_modules", "hono")).then(() => true, () => false),
        "vendored npm packages",
      );
      equal(await Deno.stat(join(root, "bin", "ployzd")).then(() => true, () => false), false, "no daemon");
    }
    const check = await new Deno.Command("sha256sum", {
      args: ["-c", "SHA256SUMS"],
      cwd: out,
      stdout: "piped",
    })
      .output();
    ok(check.success, new TextDecoder().decode(check.stdout));
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

Deno.test("install.sh --cli installs only the CLI into a prefix, as an unprivileged user, and it runs", async () => {
  if (Deno.uid() !== 0) {
    if (Deno.env.get("CI") !== undefined) {
      throw new Error("install.sh --cli test switches to nobody: needs root");
    }
    return;
  }
  const { base } = await hostReleaseOnce();
  const releases = join(base, "releases");
  const home = join(base, "home");
  await Deno.mkdir(home, { mode: 0o755 });
  await Deno.chown(home, 65534, 65534);
  const asNobody = (script: string): Promise<RunResult> =>
    run("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", script], {
      HOME: home,
      PLOYZ_RELEASE_SOURCE: releases,
      // dist signed with the test key: the installer trusts it for this local source only when told.
      PLOYZ_RELEASE_PUBLIC_KEY: TEST_RELEASE_PUBLIC_KEY,
      DENO_DIR: join(home, "deno-dir"),
    });
  const installed = await asNobody(`sh ${join(ROOT, "install.sh")} --cli --version ${PLOYZ_VERSION}`);
  equal(installed.code, 0, installed.stderr);
  match(
    installed.stderr,
    new RegExp(`installed ployz ${PLOYZ_VERSION.replaceAll(".", "\\.")} to ${home}/\\.local/bin/ployz`),
  );
  const version = await asNobody(`${home}/.local/bin/ployz version --json`);
  equal(version.code, 0, version.stderr);
  equal(JSON.parse(version.stdout).version, PLOYZ_VERSION);
  // Nothing outside the prefix: no daemon, no units.
  equal(await Deno.stat(join(home, ".local", "bin", "ployzd")).then(() => true, () => false), false);
  const refused = await asNobody(`sh ${join(ROOT, "install.sh")} --version ${PLOYZ_VERSION}`);
  equal(refused.code, 1);
  match(refused.stderr, /run as root: .*--cli installs only the CLI, without root/);
});
