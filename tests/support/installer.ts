// Tests that install Ployz into a container running real systemd (ployz-test/systemd:2, from
// .ci/images_systemd.sh): release sources built from one `tools/dist.ts` tree, and the container itself.
import { equal } from "node:assert/strict";
import { join } from "node:path";
import { SIGNATURE_FILE, signSums } from "../../lib/installer/mod.ts";
import { TEST_RELEASE_PUBLIC_KEY, TEST_RELEASE_SECRET_KEY } from "../../tools/release_test_key.ts";
import { DOCKER_ENV } from "./docker.ts";
import { eventually, sleep } from "./poll.ts";
import { ROOT, run, type RunResult } from "./spawn.ts";

/** The systemd image. */
export const SYSTEMD_IMAGE = "ployz-test/systemd:2";
const TRIPLE = Deno.build.target;

/** Runs `tools/dist.ts` for `targets` (default `host`) into `out`, failing the test unless it succeeds. */
export async function runDist(out: string, targets = "host"): Promise<RunResult> {
  const result = await run(Deno.execPath(), ["run", "--allow-all", join(ROOT, "tools", "dist.ts")], {
    PLOYZ_DIST_TARGETS: targets,
    PLOYZ_DIST_OUT: out,
    HOME: Deno.env.get("HOME") ?? "/root",
  });
  equal(result.code, 0, result.stderr + result.stdout);
  return result;
}

/**
 * Names a directory where the end-to-end runner (`tools/test_e2e.ts`) builds this host's dist once, as
 * {@link runDist} would, for every file that needs one: the build in `out/`, what it printed in `stdout` and `stderr`,
 * and, once it ends, its exit code in `code`.
 */
export const SHARED_DIST_ENV = "PLOYZ_TEST_DIST";

/**
 * This host's dist, never to be changed: the runner's shared build once it ends (see {@link SHARED_DIST_ENV}), else
 * one built here into `out`. Answers where it is and what `tools/dist.ts` printed; fails the test unless it succeeded.
 */
export async function hostDistBuild(out: string): Promise<{ out: string; result: RunResult }> {
  const shared = Deno.env.get(SHARED_DIST_ENV);
  if (shared === undefined) return { out, result: await runDist(out) };
  // The runner's build takes under a minute on a loaded host; ten is a build that will not end.
  const code = await eventually(600_000, `the shared dist build in ${shared}`, async () => {
    const text = (await Deno.readTextFile(join(shared, "code"))).trim();
    return text === "" ? undefined : Number(text);
  }, 1000);
  const result = {
    code,
    stdout: await Deno.readTextFile(join(shared, "stdout")),
    stderr: await Deno.readTextFile(join(shared, "stderr")),
  };
  equal(result.code, 0, result.stderr + result.stdout);
  return { out: join(shared, "out"), result };
}

/** This host's dist tree, `ployz-<version>-<triple>`, to copy and never change (see {@link hostDistBuild}). */
export async function hostDist(out: string): Promise<string> {
  out = (await hostDistBuild(out)).out;
  const tree = (await Array.fromAsync(Deno.readDir(out))).find((e) =>
    e.isDirectory && e.name.startsWith("ployz-")
  );
  if (tree === undefined) throw new Error(`No ployz-* tree in ${out}`);
  return join(out, tree.name);
}

/**
 * A copy of the tree `from` at `to` whose files are hard links to `from`'s, so no byte is copied (a dist tree is
 * 150 MB, and a release source holds several versions of it); a plain copy where `to` is on another file system.
 * Change a file with {@link replaceFile}, never by writing through the link, which would change `from` too.
 */
export async function linkTree(from: string, to: string): Promise<void> {
  await sh(`cp -al '${from}' '${to}' 2>/dev/null || { rm -rf '${to}'; cp -a '${from}' '${to}'; }`);
}

/** Writes `text` to a new file at `path` (one {@link linkTree} made), with the mode of the file it replaces. */
export async function replaceFile(path: string, text: string): Promise<void> {
  const { mode } = await Deno.stat(path);
  await Deno.remove(path);
  await Deno.writeTextFile(path, text, { mode: (mode ?? 0o644) & 0o777 });
}

/** Runs `script` with sh on this host; throws with its stderr when it fails. */
export async function sh(script: string, cwd?: string): Promise<string> {
  const out = await new Deno.Command("sh", { args: ["-c", script], cwd, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) throw new Error(`"${script}" failed: ${new TextDecoder().decode(out.stderr)}`);
  return new TextDecoder().decode(out.stdout);
}

/** Signs every `<rel>/<version>/SHA256SUMS` with the test release key (SHA256SUMS.sig beside it). */
export async function signReleaseSums(rel: string): Promise<void> {
  const secret = Uint8Array.from(atob(TEST_RELEASE_SECRET_KEY), (c) => c.charCodeAt(0));
  for await (const entry of Deno.readDir(rel)) {
    const sums = join(rel, entry.name, "SHA256SUMS");
    const bytes = await Deno.readFile(sums).catch(() => undefined);
    if (bytes !== undefined) {
      await Deno.writeTextFile(join(rel, entry.name, SIGNATURE_FILE), signSums(bytes, secret));
    }
  }
}

/** The environment that makes installers trust the test release key (local and http:// sources only). */
export const TEST_KEY_ENV: Record<string, string> = { PLOYZ_RELEASE_PUBLIC_KEY: TEST_RELEASE_PUBLIC_KEY };

/**
 * Builds a release source under `work/releases` holding `versions`, each a copy of one dist tree whose deno.json
 * says that version and is then changed by `patchConfig`; `v0/stable` names the first version, and install.sh
 * sits at the root, where `curl … | sh` and `ployz machine add` fetch it.
 */
export async function buildReleaseSource(
  work: string,
  versions: string[],
  patchConfig: (config: Record<string, unknown>, version: string) => void,
): Promise<string> {
  const dist = join(work, "dist");
  const built = await hostDist(dist);
  const rel = join(work, "releases");
  await Deno.mkdir(join(work, "build"), { recursive: true });
  for (const version of versions) {
    const name = `ployz-${version}-${TRIPLE}`;
    const tree = join(work, "build", name);
    await linkTree(built, tree);
    const configPath = join(tree, "deno.json");
    const config = JSON.parse(await Deno.readTextFile(configPath));
    config.version = version;
    patchConfig(config, version);
    await replaceFile(configPath, JSON.stringify(config, null, 2) + "\n");
    await Deno.mkdir(join(rel, version), { recursive: true });
    await sh(
      `tar --sort=name --owner=0 --group=0 -C '${join(work, "build")}' -cf - '${name}' | gzip -1 > '${
        join(rel, version, `${name}.tar.gz`)
      }'`,
    );
    await sh(`sha256sum '${name}.tar.gz' > SHA256SUMS`, join(rel, version));
    await Deno.remove(tree, { recursive: true });
  }
  await Deno.mkdir(join(rel, "v0"));
  await Deno.writeTextFile(join(rel, "v0", "stable"), `${versions[0]}\n`);
  await Deno.copyFile(join(ROOT, "install.sh"), join(rel, "install.sh"));
  await signReleaseSums(rel);
  await Deno.chmod(rel, 0o755);
  // Only a tree built here; the runner's shared one is removed by the runner.
  if (built.startsWith(dist)) await Deno.remove(dist, { recursive: true });
  return rel;
}

/** A running container with systemd as PID 1. */
export class SystemdMachine {
  constructor(readonly name: string) {}

  /** Starts `ployz-test/systemd:2` with `extra` docker-run arguments and waits until systemd has booted. */
  static async start<T extends SystemdMachine>(
    this: new (name: string) => T,
    name: string,
    extra: string[],
  ): Promise<T> {
    const started = await run("docker", [
      "run",
      "-d",
      "--name",
      name,
      "--label",
      "ployz.test=installer",
      "--cap-add",
      "SYS_ADMIN",
      "--security-opt",
      "seccomp=unconfined",
      "--security-opt",
      "apparmor=unconfined",
      "-v",
      "/sys/fs/cgroup:/sys/fs/cgroup:rw",
      "--tmpfs",
      "/run",
      "--tmpfs",
      "/run/lock",
      "-e",
      "container=docker",
      // Every command run in the container (docker exec inherits it) trusts the test release key.
      "-e",
      `PLOYZ_RELEASE_PUBLIC_KEY=${TEST_RELEASE_PUBLIC_KEY}`,
      ...extra,
      SYSTEMD_IMAGE,
    ], DOCKER_ENV);
    equal(started.code, 0, started.stderr);
    const m = new this(name);
    const deadline = Date.now() + 90_000;
    while (!/^(running|degraded)/.test((await m.exec("systemctl is-system-running")).stdout)) {
      if (Date.now() > deadline) throw new Error("systemd did not finish booting");
      await sleep(500);
    }
    return m;
  }

  /** Runs `script` with sh inside. */
  async exec(script: string): Promise<RunResult> {
    return await run("docker", ["exec", this.name, "sh", "-c", script], DOCKER_ENV);
  }

  /** Runs `script` inside; asserts it exits 0 and returns its trimmed output. */
  async ok(script: string): Promise<string> {
    const r = await this.exec(script);
    equal(r.code, 0, `${script}\n${r.stderr}${r.stdout}`);
    return r.stdout.trim();
  }

  /** Removes the container. */
  async remove(): Promise<void> {
    await run("docker", ["rm", "-f", this.name], DOCKER_ENV);
  }
}
