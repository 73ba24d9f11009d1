// Secrets, configs and relative binds reach a real container as files at Compose's paths, with their owner and
// mode, read-only, from copies the Machine wrote from the content the create request carried.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { cpSync } from "node:fs";
import { join } from "node:path";
import { materializeFiles, pruneFiles } from "../lib/daemon/mod.ts";
import { loadCompose, openEngine, serviceContainerSpec } from "../lib/deploy/mod.ts";
import { DOCKER_SOCKET as SOCKET } from "./support/docker.ts";
import { needs } from "./support/needs.ts";

const SECRET = "s3cret-do-not-leak";

async function docker(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command("docker", { args: ["-H", `unix://${SOCKET}`, ...args] }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

// The Project and its files live in tests/fixtures/shipped/, shared with the other shipped-files test; each
// test works on its own copy.
function project(dir: string): ReturnType<typeof loadCompose> {
  cpSync(join(import.meta.dirname!, "fixtures", "shipped"), dir, { recursive: true });
  return loadCompose({ path: join(dir, "compose.yaml"), env: { API_TOKEN: "tok-123" } });
}

Deno.test(needs(["docker"], {
  name: "a real container reads its secrets, configs and shipped files at Compose's paths, owner and mode",
  async fn() {
    const dir = await Deno.makeTempDir();
    const id = crypto.randomUUID().slice(0, 8);
    const engine = openEngine({
      socketPath: SOCKET,
      machineId: `test-${id}`,
      extraLabels: { "ployz.test": id },
    });
    try {
      const { project: p, files } = project(dir);
      const planned = serviceContainerSpec(p, p.services.app, { deploymentId: `d${id}`, slot: "1" });
      const spec = {
        ...planned,
        name: `ployz-test-${id}-files`,
        creationKey: `ck-${id}`,
        network: undefined,
      };
      const sent = Object.fromEntries(
        [...files].map(([digest, bytes]) => [digest, Buffer.from(bytes).toString("base64")]),
      );
      const filesDir = join(dir, "files");
      await materializeFiles(filesDir, spec, sent);
      const made = await engine.createContainer(spec, undefined, { filesDir });
      await engine.startContainer(made.id);
      const read = async (path: string): Promise<string> => {
        const out = await docker("exec", made.id, "cat", path);
        assert.equal(out.code, 0, out.stderr);
        return out.stdout;
      };
      assert.equal(await read("/run/secrets/db-password"), SECRET);
      assert.equal(await read("/run/secrets/token"), "tok-123");
      assert.equal(await read("/etc/app/config.yaml"), "level: debug");
      assert.equal(await read("/etc/nginx/nginx.conf"), "worker_processes 1;\n");
      assert.equal(await read("/www/site/index.html"), "<h1>shipped</h1>\n");
      assert.equal(await read("/www/site/css/a.css"), "h1 {}\n");
      const owner = await docker("exec", made.id, "stat", "-c", "%u:%g %a", "/run/secrets/token");
      if (owner.code === 0) assert.equal(owner.stdout.trim(), "1000:1000 400");
      else {
        const listed = await docker("exec", made.id, "ls", "-ln", "/run/secrets/token");
        assert.match(listed.stdout, /^-r-------- +1 1000 +1000 /);
      }
      const written = await docker("exec", made.id, "sh", "-c", "echo x > /run/secrets/db-password");
      assert.notEqual(written.code, 0, "a shipped file is read-only");
      const inspected = await docker("inspect", made.id);
      assert.ok(!inspected.stdout.includes(SECRET), "docker inspect shows no secret content");
      // A second slot needs no content: the copy is already on this Machine.
      await materializeFiles(filesDir, spec, undefined);
      // The copies stay while a container of the Project is left, and go with the last one.
      await pruneFiles(filesDir, spec.project, engine);
      assert.ok((await Deno.stat(join(filesDir, spec.project))).isDirectory);
      await engine.removeContainer(made.id, { force: true });
      await pruneFiles(filesDir, spec.project, engine);
      await assert.rejects(Deno.stat(join(filesDir, spec.project)), Deno.errors.NotFound);
    } finally {
      await docker("rm", "-f", "-v", `ployz-test-${id}-files`);
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
