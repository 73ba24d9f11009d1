import assert from "node:assert/strict";
import { join } from "node:path";
import { OperatorError } from "./errors.ts";
import { credentialsFor } from "./registry_auth.ts";
import { tempDir } from "../util/testing/mod.ts";

async function withConfig(config: unknown, fn: (dir: string) => Promise<void>): Promise<void> {
  await using tmp = await tempDir("ployz-docker-config-");
  const dir = tmp.path;
  await Deno.writeTextFile(join(dir, "config.json"), JSON.stringify(config));
  await fn(dir);
}

Deno.test("credentialsFor() reads Docker's auths (base64, Hub's key) and prefers a saved login", async () => {
  await withConfig({
    auths: {
      "reg.example:5000": { auth: btoa("alice:pa:ss") },
      "https://index.docker.io/v1/": { auth: btoa("bob:hub") },
      "https://other.example": { username: "carol", password: "pw" },
    },
  }, async (dir) => {
    assert.deepEqual(await credentialsFor("reg.example:5000", { dockerConfigDir: dir }), {
      username: "alice",
      password: "pa:ss",
      serveraddress: "reg.example:5000",
    });
    assert.equal((await credentialsFor("docker.io", { dockerConfigDir: dir }))?.username, "bob");
    assert.equal((await credentialsFor("other.example", { dockerConfigDir: dir }))?.password, "pw");
    assert.equal(await credentialsFor("none.example", { dockerConfigDir: dir }), undefined);
    const saved = await credentialsFor("reg.example:5000", {
      dockerConfigDir: dir,
      saved: (host) => ({ host, username: "saved", secret: "s", savedAt: "" }),
    });
    assert.equal(saved?.username, "saved");
  });
  assert.equal(await credentialsFor("reg.example:5000", { dockerConfigDir: "/nonexistent" }), undefined);
});

Deno.test("credentialsFor() runs docker-credential-* helpers by the protocol; failures name the helper, never a secret", async () => {
  const bin = await Deno.makeTempDir({ prefix: "ployz-helper-" });
  const path = Deno.env.get("PATH") ?? "";
  try {
    // Answers for reg.example only; says "not found" as the protocol does for anything else.
    await Deno.writeTextFile(
      join(bin, "docker-credential-fake"),
      `#!/bin/sh
read host
[ "$1" = get ] || exit 3
if [ "$host" = reg.example ]; then echo '{"ServerURL":"reg.example","Username":"<token>","Secret":"tok-123"}'; exit 0; fi
echo "credentials not found in native keychain"; exit 1
`,
      { mode: 0o755 },
    );
    await Deno.writeTextFile(
      join(bin, "docker-credential-broken"),
      "#!/bin/sh\necho secret-in-output >&2\nexit 2\n",
      {
        mode: 0o755,
      },
    );
    Deno.env.set("PATH", `${bin}:${path}`);
    await withConfig(
      { credHelpers: { "reg.example": "fake", "bad.example": "broken" }, credsStore: "fake" },
      async (dir) => {
        assert.deepEqual(await credentialsFor("reg.example", { dockerConfigDir: dir }), {
          identitytoken: "tok-123",
          serveraddress: "reg.example",
        });
        assert.equal(await credentialsFor("elsewhere.example", { dockerConfigDir: dir }), undefined);
        await assert.rejects(credentialsFor("bad.example", { dockerConfigDir: dir }), (e) => {
          assert.ok(e instanceof OperatorError);
          assert.equal(e.code, "unavailable");
          assert.match(e.message, /docker-credential-broken.*"bad\.example".*exit 2/);
          assert.ok(!e.message.includes("secret-in-output"));
          return true;
        });
      },
    );
    await withConfig({ credHelpers: { "reg.example": "absent" } }, async (dir) => {
      await assert.rejects(credentialsFor("reg.example", { dockerConfigDir: dir }), /not installed/);
    });
    await withConfig({ credHelpers: { "reg.example": "../../bin/sh" } }, async (dir) => {
      await assert.rejects(credentialsFor("reg.example", { dockerConfigDir: dir }), /not a valid name/);
    });
  } finally {
    Deno.env.set("PATH", path);
    await Deno.remove(bin, { recursive: true });
  }
});
