// Secrets, configs and relative binds: the loader keeps digests, never content; a Machine writes a copy only from
// content matching its digest. (A real container reading them: tests/shipped_files_docker_test.ts.)
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { cpSync } from "node:fs";
import { join } from "node:path";
import { loadCompose, serviceContainerSpec } from "../deploy/mod.ts";
import { RpcError } from "../rpc/mod.ts";
import { materializeFiles } from "./shipped_files.ts";
import { tempDir } from "../util/testing/mod.ts";

const SECRET = "s3cret-do-not-leak";

// The Project and its files live in tests/fixtures/shipped/, shared with the other shipped-files test; each
// test works on its own copy.
function project(dir: string): ReturnType<typeof loadCompose> {
  cpSync(join(import.meta.dirname!, "..", "..", "tests", "fixtures", "shipped"), dir, { recursive: true });
  return loadCompose({ path: join(dir, "compose.yaml"), env: { API_TOKEN: "tok-123" } });
}

Deno.test("the loader keeps digests, not content: Saved State and the spec label never hold a secret", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const { project: p, files } = project(dir);
    const app = p.services.app;
    assert.deepEqual(app.files?.map((f) => [f.kind, f.target, f.mode]), [
      ["secret", "/run/secrets/db-password", 0o444],
      ["secret", "/run/secrets/token", 0o400],
      ["config", "/etc/app/config.yaml", 0o444],
      ["bind", "/etc/nginx/nginx.conf", app.files![3].mode],
      ["bind", "/www/site/css/a.css", app.files![4].mode],
      ["bind", "/www/site/index.html", app.files![5].mode],
    ]);
    assert.ok(!JSON.stringify(p).includes(SECRET), "the normalized Project holds no content");
    assert.equal(files.size, 6);
    const spec = serviceContainerSpec(p, app, { deploymentId: "d1", slot: "1" });
    assert.ok(!JSON.stringify(spec).includes(SECRET), "the spec holds digests only");
    // Editing a shipped file is a spec change.
    Deno.writeTextFileSync(join(dir, "nginx.conf"), "worker_processes 2;\n");
    const again = loadCompose({ path: join(dir, "compose.yaml"), env: { API_TOKEN: "tok-123" } }).project;
    const next = serviceContainerSpec(again, again.services.app, { deploymentId: "d1", slot: "1" });
    assert.notDeepEqual(next.files, spec.files);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("external secrets are refused with the reason; a relative bind above the limit is refused with its size", () => {
  const dir = Deno.makeTempDirSync();
  try {
    Deno.writeTextFileSync(
      join(dir, "compose.yaml"),
      "services:\n  a:\n    image: b\n    secrets: [x]\n    volumes: ['./big:/big']\nsecrets:\n  x:\n    external: true\n",
    );
    const big = Deno.openSync(join(dir, "big"), { write: true, create: true });
    big.truncateSync(3 * 1024 * 1024);
    big.close();
    assert.throws(
      () => loadCompose({ path: join(dir, "compose.yaml"), env: {} }),
      (error: Error) => {
        assert.match(error.message, /:8:5: secrets\.x\.external: external secrets are not supported/);
        assert.match(error.message, /bind mount source "\.\/big" is 3145728 bytes, more than the 2097152/);
        return true;
      },
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("a copy is written only from content matching its digest, and a missing content is refused", async () => {
  await using tmp = await tempDir();
  const dir = tmp.path;
  const { project: p, files } = project(dir);
  const spec = serviceContainerSpec(p, p.services.app, { deploymentId: "d1", slot: "1" });
  await assert.rejects(materializeFiles(join(dir, "files"), spec, {}), (error: Error) => {
    assert.ok(error instanceof RpcError);
    assert.match(
      error.message,
      /needs the file it mounts at "\/run\/secrets\/db-password", whose content was not sent/,
    );
    assert.ok(!error.message.includes(SECRET));
    return true;
  });
  const wrong = Object.fromEntries(
    [...files.keys()].map((digest) => [digest, Buffer.from("x").toString("base64")]),
  );
  await assert.rejects(materializeFiles(join(dir, "files"), spec, wrong), /does not match its digest/);
});
