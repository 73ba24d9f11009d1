// The Docker adapter against a real registry (Debian's docker-registry, htpasswd basic auth) on loopback, which
// dockerd treats as an insecure registry: resolving a tag to the registry's digest, pulling a pinned reference with
// layer progress, and each refusal with its code, naming the registry and never the password.
import assert from "node:assert/strict";
import { join } from "node:path";
import { DockerError, type PullProgress } from "../lib/deploy/mod.ts";
import { DOCKER_ENV, dockerTest, IMAGE } from "./support/docker.ts";
import { startRegistry } from "./support/registry.ts";
import { run } from "./support/spawn.ts";

const USER = { name: "alice", password: "s3cret-Pa55-for-tests" };

async function docker(args: string[], config: string): Promise<string> {
  const result = await run("docker", args, { ...DOCKER_ENV, DOCKER_CONFIG: config });
  assert.equal(result.code, 0, `docker ${args.join(" ")}: ${result.stderr}`);
  return result.stdout;
}

dockerTest(
  "a tag resolves to the registry's digest and a pinned pull reports layers; refusals are coded",
  async (s) => {
    await using registry = await startRegistry({ user: USER });
    const config = await Deno.makeTempDir({ prefix: "ployz-docker-config-" });
    const ref = `${registry.host}/test/busybox:${s.id}`;
    try {
      const login = await run(
        "docker",
        ["login", "-u", USER.name, "--password-stdin", registry.host],
        { ...DOCKER_ENV, DOCKER_CONFIG: config },
        USER.password,
      );
      assert.equal(login.code, 0, login.stderr);
      // A layer of its own, so the pull below downloads one (the base layers are already here).
      const marker = join(config, "marker");
      await Deno.writeTextFile(marker, s.id);
      const name = `ployz-test-${s.id}-commit`;
      await docker(["create", "--name", name, IMAGE, "true"], config);
      await docker(["cp", marker, `${name}:/marker`], config);
      await docker(["commit", name, ref], config);
      await docker(["rm", name], config);
      const pushed = await docker(["push", ref], config);
      const digest = pushed.match(/digest: (sha256:[a-f0-9]{64})/)?.[1];
      assert.ok(digest !== undefined, pushed);
      await docker(["rmi", ref], config);

      const auth = { username: USER.name, password: USER.password, serveraddress: registry.host };
      assert.equal(await s.engine.resolveDigest(ref, { auth }), digest);

      const pinned = `${ref}@${digest}`;
      assert.equal(await s.engine.imageExists(pinned), false);
      const seen: PullProgress[] = [];
      const done = await s.engine.pullImage(pinned, { auth, onProgress: (p) => seen.push(p) });
      assert.ok(seen.length > 0, "progress was reported");
      assert.ok(done.layers >= 2 && done.layersDone === done.layers, JSON.stringify(done));
      // Docker may report a small layer only as complete, with no byte counts (seen under load); byte progress of
      // an in-flight pull is proven by the throttled pulls in tests/lab_registry_test.ts.
      assert.ok(done.bytes <= done.bytesTotal, JSON.stringify(done));
      assert.equal(await s.engine.imageExists(pinned), true);
      const inspected = await s.engine.inspectImage(pinned);
      assert.ok(inspected?.RepoDigests?.includes(`${registry.host}/test/busybox@${digest}`));

      const refused = async (promise: Promise<unknown>, code: string, pattern: RegExp): Promise<void> => {
        await assert.rejects(promise, (e) => {
          assert.ok(e instanceof DockerError, String(e));
          assert.equal(e.code, code, e.message);
          assert.match(e.message, pattern);
          assert.ok(!e.message.includes(USER.password), "the password never appears");
          return true;
        });
      };
      const wrong = { ...auth, password: "not-the-password" };
      await refused(s.engine.resolveDigest(ref, { auth: wrong }), "unauthenticated", /registry ".+" refused/);
      await refused(
        s.engine.resolveDigest(ref),
        "unauthenticated",
        new RegExp(registry.host.replaceAll(".", "\\.")),
      );
      await refused(
        s.engine.resolveDigest(`${registry.host}/test/busybox:absent`, { auth }),
        "not_found",
        /has no such image/,
      );
      await registry.stop();
      await refused(s.engine.resolveDigest(ref, { auth }), "unavailable", /could not be reached/);
      await refused(
        s.engine.pullImage(`${registry.host}/test/other@${digest}`, { auth }),
        "unavailable",
        /could not be reached/,
      );
    } finally {
      await run("docker", ["rmi", ref], DOCKER_ENV);
      // Only by the registry's names: the image ids are shared with the test images.
      const ids = await run(
        "docker",
        ["images", "-q", "--filter", `reference=${registry.host}/*/*`],
        DOCKER_ENV,
      );
      for (const id of new Set(ids.stdout.split("\n").filter((l) => l !== ""))) {
        const names = await run(
          "docker",
          ["image", "inspect", id, "--format", "{{json .RepoDigests}}"],
          DOCKER_ENV,
        );
        for (const name of JSON.parse(names.stdout || "[]") as string[]) {
          if (name.startsWith(`${registry.host}/`)) await run("docker", ["rmi", name], DOCKER_ENV);
        }
      }
      await Deno.remove(config, { recursive: true });
    }
  },
);
