import assert from "node:assert/strict";
import { ComposeError } from "./issue.ts";
import { loadCompose } from "./load.ts";

function files(map: Record<string, string>): (path: string) => string {
  return (path) => {
    if (Object.hasOwn(map, path)) return map[path];
    throw new Deno.errors.NotFound(path);
  };
}

const BASE = `
name: shop
services:
  web:
    image: busybox:1
    command: ["httpd", "-f"]
    environment: [A=1, B=2]
    labels: {tier: web}
    ports: ["8080:80"]
    volumes: ["/srv/a:/a", "/srv/b:/b"]
    cap_add: [NET_ADMIN]
    env_file: web.env
  db:
    image: busybox:1
`;
const OVERRIDE = `
services:
  web:
    image: busybox:2
    command: ["sleep", "1"]
    environment: {B: two, C: "3"}
    labels: [owner=ops]
    ports: ["9090:90"]
    volumes: ["/srv/b2:/b"]
    cap_add: [NET_ADMIN, SYS_TIME]
    deploy: {replicas: 2}
`;

Deno.test("-f a -f b merges as Compose: mappings by key, command replaced, lists by target or appended", () => {
  const { project } = loadCompose({
    files: ["/p/compose.yaml", "/p/override.yaml"],
    env: {},
    readFile: files({ "/p/compose.yaml": BASE, "/p/override.yaml": OVERRIDE, "/p/web.env": "E=1\n" }),
  });
  const web = project.services.web;
  assert.equal(web.image, "busybox:2");
  assert.deepEqual(web.command, ["sleep", "1"]);
  assert.deepEqual(web.environment, { A: "1", B: "two", C: "3", E: "1" });
  assert.deepEqual(web.labels, { owner: "ops", tier: "web" });
  assert.deepEqual(web.ports.map((p) => p.kind === "host" && p.publishedPort), [8080, 9090]);
  assert.deepEqual(web.mounts.map((m) => m.type === "bind" && `${m.source}:${m.target}`), [
    "/srv/a:/a",
    "/srv/b2:/b",
  ]);
  assert.deepEqual(web.capAdd, ["NET_ADMIN", "SYS_TIME"]);
  assert.equal(web.replicas, 2);
  assert.deepEqual(Object.keys(project.services), ["db", "web"]);
});

Deno.test("a problem in the second file names that file, line and column", () => {
  try {
    loadCompose({
      files: ["/p/compose.yaml", "/p/override.yaml"],
      env: {},
      readFile: files({
        "/p/compose.yaml": BASE,
        "/p/override.yaml": "services:\n  web:\n    command: 42\n",
        "/p/web.env": "",
      }),
    });
    assert.fail("expected a refusal");
  } catch (error) {
    assert.ok(error instanceof ComposeError);
    assert.equal(error.issues.length, 1);
    assert.deepEqual(
      { file: error.issues[0].file, line: error.issues[0].line, column: error.issues[0].column },
      { file: "/p/override.yaml", line: 3, column: 14 },
    );
  }
});

Deno.test("include: adds another file's services, with paths relative to it, and refuses a clash", () => {
  const root = "include:\n  - lib/db.yaml\nservices:\n  web: {image: busybox:1, depends_on: [db]}\n";
  const db = "services:\n  db:\n    image: busybox:1\n    env_file: db.env\n";
  const read = files({ "/p/compose.yaml": root, "/p/lib/db.yaml": db, "/p/lib/db.env": "PW=x\n" });
  const { project } = loadCompose({ path: "/p/compose.yaml", env: {}, readFile: read });
  assert.deepEqual(Object.keys(project.services), ["db", "web"]);
  assert.deepEqual(project.services.db.environment, { PW: "x" });
  const clash = "include: [lib/db.yaml]\nservices:\n  db: {image: busybox:1}\n";
  try {
    loadCompose({
      path: "/p/compose.yaml",
      env: {},
      readFile: files({ "/p/compose.yaml": clash, "/p/lib/db.yaml": db }),
    });
    assert.fail("expected a refusal");
  } catch (error) {
    assert.ok(error instanceof ComposeError);
    assert.match(
      error.message,
      /\/p\/lib\/db\.yaml:2:3: services\.db: service "db" is defined both here and in "\/p\/compose\.yaml"/,
    );
  }
  const cycle = files({ "/p/compose.yaml": "include: [compose.yaml]\nservices: {a: {image: b}}\n" });
  assert.throws(() => loadCompose({ path: "/p/compose.yaml", env: {}, readFile: cycle }), /include cycle/);
});
