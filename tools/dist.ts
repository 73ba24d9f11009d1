// `deno task dist`: release artifacts in dist/.
// Always: an offline-installable tree per Linux target (pinned deno + source + vendored node_modules +
// launchers), tarred, with SHA256SUMS. Where denort exists: compiled ployzd/ployz per target. For macOS
// (aarch64/x86_64-apple-darwin): an operator-CLI tree, `ployz-cli-<version>-<triple>.tar.gz`, with bin/ployz only.
// PLOYZ_DIST_TARGETS=host builds only this machine's target (a comma list names targets, Linux or macOS);
// PLOYZ_DIST_OUT overrides dist/.
// SHA256SUMS.sig signs SHA256SUMS with the release key, read from PLOYZ_RELEASE_SIGNING_KEY_FILE (a file holding
// the base64 of the 32-byte Ed25519 secret) or PLOYZ_RELEASE_SIGNING_KEY (that base64); without either, with the
// TEST key (tools/release_test_key.ts), which no installer trusts unless told.
import { createHash } from "node:crypto";
import { basename, join, relative } from "node:path";
import { PLOYZ_VERSION } from "../lib/cli/mod.ts";
import { publicKeyOf, RELEASE_PUBLIC_KEY, SIGNATURE_FILE, signSums } from "../lib/installer/mod.ts";
import { TEST_RELEASE_SECRET_KEY } from "./release_test_key.ts";
import { bundleCli, bundleDaemon, CLI_BUNDLE } from "./build/bundle.ts";
import { DAEMON_BUNDLE } from "../lib/permissions/mod.ts";
import { compileTarget } from "./build/compile.ts";
import { CLI_TARGETS, LINUX_TARGETS, type Target } from "./build/targets.ts";
import { messageOf } from "../lib/util/mod.ts";

const ROOT = join(import.meta.dirname!, "..");
const OUT = Deno.env.get("PLOYZ_DIST_OUT") ?? join(ROOT, "dist");
const SOURCE_DIRS = ["cmd", "lib", "bin"];
// What a CLI-only tree's bin/ holds: the launcher and what it sources, no ployzd.
const CLI_LAUNCHERS = ["ployz", "_launch.sh"];
// Tests, benchmarks and fixtures stay out of a release.
const EXCLUDE = [/_test\.ts$/, /_bench\.ts$/, /\/testdata\//, /\/test_(support|helpers)\.ts$/];

async function main(): Promise<void> {
  const targets = selectTargets(Deno.env.get("PLOYZ_DIST_TARGETS"));
  await Deno.mkdir(OUT, { recursive: true });
  // One bundle for every tree: it is JavaScript, the same on each target.
  const bundled = await Deno.makeTempDir({ prefix: "ployz-bundle-" });
  try {
    await bundleCli(ROOT, bundled);
    await bundleDaemon(ROOT, bundled);
    await buildAll(targets, bundled);
  } finally {
    await Deno.remove(bundled, { recursive: true });
  }
}

async function buildAll(targets: Target[], bundled: string): Promise<void> {
  const artifacts: string[] = [];
  for (const target of targets) {
    const deno = await denoBinaryFor(target);
    if (CLI_TARGETS.includes(target)) {
      if (!deno) throw new Error(`dist: cannot obtain ${target.npmPackage}@${Deno.version.deno} from npm`);
      artifacts.push(await buildTree(target, deno, bundled, "cli"));
      continue;
    }
    if (!deno) {
      console.error(
        `dist: no tree for ${target.triple}: cannot obtain ${target.npmPackage}@${Deno.version.deno} from npm`,
      );
      continue;
    }
    const tarball = await buildTree(target, deno, bundled);
    if (target.triple === Deno.build.target) await verifyTreeOffline(tarball);
    artifacts.push(tarball);
    const compiled = await compileTarget(ROOT, target, join(OUT, "bin"));
    if (compiled.skipped) console.log(`dist: ${compiled.skipped}`);
    artifacts.push(...compiled.binaries);
  }
  if (artifacts.length === 0) throw new Error("dist: no artifact was built");
  await writeChecksums(artifacts);
}

function selectTargets(wanted: string | undefined): Target[] {
  const all = [...LINUX_TARGETS, ...CLI_TARGETS];
  if (wanted === "host") return LINUX_TARGETS.filter((t) => t.triple === Deno.build.target);
  if (!wanted) return all;
  const names = wanted.split(",");
  const unknown = names.filter((n) => !all.some((t) => t.triple === n));
  if (unknown.length > 0) throw new Error(`dist: unknown target "${unknown[0]}"`);
  return all.filter((t) => names.includes(t.triple));
}

/** The deno binary for `target`: this one for the host, otherwise unpacked from its npm package. */
async function denoBinaryFor(target: Target): Promise<string | undefined> {
  if (target.triple === Deno.build.target) return Deno.execPath();
  const cache = join(ROOT, ".tools", "targets", target.triple);
  const binary = join(cache, "package", "deno");
  if (await exists(binary)) return binary;
  await Deno.mkdir(cache, { recursive: true });
  const pack = await run(
    "npm",
    ["pack", "--silent", `${target.npmPackage}@${Deno.version.deno}`],
    cache,
    false,
  );
  if (!pack) return undefined;
  const tgz = (await Array.fromAsync(Deno.readDir(cache))).find((e) => e.name.endsWith(".tgz"));
  if (!tgz) return undefined;
  await run("tar", ["-xzf", tgz.name], cache);
  return (await exists(binary)) ? binary : undefined;
}

async function buildTree(
  target: Target,
  deno: string,
  bundled: string,
  kind: "full" | "cli" = "full",
): Promise<string> {
  const name = `ployz-${kind === "cli" ? "cli-" : ""}${PLOYZ_VERSION}-${target.triple}`;
  const tree = join(OUT, name);
  await Deno.remove(tree, { recursive: true }).catch(() => {});
  await Deno.mkdir(tree, { recursive: true });
  await Deno.copyFile(deno, join(tree, "deno"));
  await Deno.chmod(join(tree, "deno"), 0o755);
  for (const file of ["deno.json", "deno.lock", "README.md"]) {
    if (await exists(join(ROOT, file))) await Deno.copyFile(join(ROOT, file), join(tree, file));
  }
  for (const dir of SOURCE_DIRS) await copySource(join(ROOT, dir), join(tree, dir));
  if (kind === "cli") {
    for await (const entry of Deno.readDir(join(tree, "bin"))) {
      if (!CLI_LAUNCHERS.includes(entry.name)) await Deno.remove(join(tree, "bin", entry.name));
    }
  }
  // Vendored npm packages: copied as deno laid them out, so `--cached-only --frozen` needs no registry.
  await copyVendored(join(ROOT, "node_modules"), join(tree, "node_modules"));
  // Last, so no source in the tree is newer than them: bin/ployz, bin/ployzd and the units run them only then.
  await copySource(join(bundled, CLI_BUNDLE, ".."), join(tree, CLI_BUNDLE, ".."));
  if (kind === "full") await copySource(join(bundled, DAEMON_BUNDLE, ".."), join(tree, DAEMON_BUNDLE, ".."));
  const tarball = join(OUT, `${name}.tar.gz`);
  await run("tar", [
    "--sort=name",
    "--owner=0",
    "--group=0",
    "--numeric-owner",
    "-czf",
    tarball,
    "-C",
    OUT,
    name,
  ], OUT);
  console.log(`dist: ${relative(ROOT, tarball)}`);
  return tarball;
}

async function copySource(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    const src = join(from, entry.name);
    if (EXCLUDE.some((re) => re.test(src))) continue;
    if (entry.isDirectory) await copySource(src, join(to, entry.name));
    else if (entry.isFile) {
      await Deno.copyFile(src, join(to, entry.name));
      const mode = (await Deno.stat(src)).mode;
      if (mode !== null) await Deno.chmod(join(to, entry.name), mode & 0o777);
    }
  }
}

/**
 * Copies deno's `node_modules` layout (directories, files with their mode, symlinks as links), without the
 * `.deno.lock.poll` heartbeat a running deno writes and deletes: a `cp -a` or `tar` taken while another deno
 * starts fails on it (gone, or its directory changed), and a release has no use for it.
 */
async function copyVendored(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    if (entry.name === ".deno.lock.poll") continue;
    const src = join(from, entry.name);
    const dest = join(to, entry.name);
    if (entry.isSymlink) await Deno.symlink(await Deno.readLink(src), dest);
    else if (entry.isDirectory) await copyVendored(src, dest);
    else if (entry.isFile) {
      await Deno.copyFile(src, dest);
      const mode = (await Deno.stat(src)).mode;
      if (mode !== null) await Deno.chmod(dest, mode & 0o777);
    }
  }
}

/** Unpacks the tree elsewhere and runs both launchers with an empty DENO_DIR and a dead registry. */
async function verifyTreeOffline(tarball: string): Promise<void> {
  const scratch = await Deno.makeTempDir({ prefix: "ployz-dist-verify-" });
  try {
    await run("tar", ["-xzf", tarball, "-C", scratch], scratch);
    const tree = join(scratch, basename(tarball, ".tar.gz"));
    for (const launcher of ["ployzd", "ployz"]) {
      const out = await new Deno.Command(join(tree, "bin", launcher), {
        args: ["version", "--json"],
        env: {
          DENO_DIR: join(scratch, "deno-dir"),
          NPM_CONFIG_REGISTRY: "http://127.0.0.1:9/",
          NO_COLOR: "1",
        },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder().decode(out.stdout);
      if (!out.success || JSON.parse(text).version !== PLOYZ_VERSION) {
        throw new Error(
          `dist: the unpacked tree's bin/${launcher} failed offline: ${new TextDecoder().decode(out.stderr)}`,
        );
      }
    }
    // Unpacked, no source is newer than the bundles: the tree's launchers run them.
    const bundled = [["ployz", "version", CLI_BUNDLE], ["ployzd", "serve", DAEMON_BUNDLE]] as const;
    for (const [program, subcommand, bundle] of bundled) {
      const printed = await new Deno.Command(join(tree, "bin", program), {
        args: [subcommand],
        env: { PLOYZ_LAUNCHER_PRINT: "1" },
        stdout: "piped",
      }).output();
      if (!new TextDecoder().decode(printed.stdout).split("\n").includes(join(tree, bundle))) {
        throw new Error(
          `dist: the unpacked tree's bin/${program} ${subcommand} does not run its bundle ${bundle}`,
        );
      }
    }
    console.log(
      `dist: verified ${basename(tarball)} runs offline from a fresh directory, CLI and daemon bundled`,
    );
  } finally {
    await Deno.remove(scratch, { recursive: true });
  }
}

async function writeChecksums(artifacts: string[]): Promise<void> {
  const lines: string[] = [];
  for (const path of artifacts) {
    const hash = createHash("sha256");
    for await (const chunk of (await Deno.open(path)).readable) hash.update(chunk);
    lines.push(`${hash.digest("hex")}  ${relative(OUT, path)}`);
  }
  const sums = new TextEncoder().encode(lines.join("\n") + "\n");
  await Deno.writeFile(join(OUT, "SHA256SUMS"), sums);
  console.log(`dist: ${relative(ROOT, join(OUT, "SHA256SUMS"))} (${lines.length} artifacts)`);
  const key = await signingKey();
  await Deno.writeTextFile(join(OUT, SIGNATURE_FILE), signSums(sums, key.secret));
  console.log(`dist: ${relative(ROOT, join(OUT, SIGNATURE_FILE))} signed with ${key.what}`);
}

/** The release signing key from the environment, else the test key (said so plainly). */
async function signingKey(): Promise<{ secret: Uint8Array; what: string }> {
  const file = Deno.env.get("PLOYZ_RELEASE_SIGNING_KEY_FILE");
  const text = file ? await Deno.readTextFile(file) : Deno.env.get("PLOYZ_RELEASE_SIGNING_KEY");
  const secret = Uint8Array.from(atob((text ?? TEST_RELEASE_SECRET_KEY).trim()), (c) => c.charCodeAt(0));
  if (secret.length !== 32) throw new Error("dist: a release signing key is base64 of 32 bytes");
  const publicKey = publicKeyOf(secret);
  if (text === undefined) {
    return {
      secret,
      what: `the TEST key (${publicKey}): installers refuse it unless given PLOYZ_RELEASE_PUBLIC_KEY`,
    };
  }
  if (publicKey !== RELEASE_PUBLIC_KEY) {
    throw new Error(
      `dist: the signing key's public half ${publicKey} is not the installer's ${RELEASE_PUBLIC_KEY}`,
    );
  }
  return { secret, what: "the release key" };
}

async function run(cmd: string, args: string[], cwd: string, required = true): Promise<boolean> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "null", stderr: "piped" }).output();
  if (!out.success && required) {
    throw new Error(`dist: ${cmd} ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
  return out.success;
}

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

if (import.meta.main) {
  try {
    await main();
  } catch (error) {
    console.error(messageOf(error));
    Deno.exit(1);
  }
}
