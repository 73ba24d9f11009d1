import assert from "node:assert/strict";
import { canonicalJson } from "./canonical_json.ts";
import { compareServiceSpecs, serviceSpecDigest } from "./spec.ts";
import { loadText } from "./test_helpers.ts";
import type { NormalizedService } from "./types.ts";

const BASE = [
  "services:",
  "  web:",
  "    image: nginx:1.27",
  "    env_file: web.env",
  "    x-ports: [80/http, 9100:9100@host]",
  "    volumes: [data:/data, /srv:/srv]",
  "    deploy:",
  "      replicas: 2",
  "volumes: {data: {}}",
].join("\n");

function web(text = BASE, env = "A=1\n"): NormalizedService {
  return loadText(text, { files: { "/proj/web.env": env } }).project.services.web;
}

Deno.test("serviceSpecDigest() is a stable sha256 hex of the spec", () => {
  const digest = serviceSpecDigest(web());
  assert.match(digest, /^[0-9a-f]{64}$/);
  assert.equal(serviceSpecDigest(web()), digest);
});

Deno.test("serviceSpecDigest() changes with env_file contents", () => {
  assert.notEqual(serviceSpecDigest(web(BASE, "A=2\n")), serviceSpecDigest(web()));
});

Deno.test("serviceSpecDigest() ignores replicas and the order of ports and mounts", () => {
  const scaled = BASE.replace("replicas: 2", "replicas: 5");
  const reordered = BASE.replace("[80/http, 9100:9100@host]", "[9100:9100@host, 80/http]")
    .replace("[data:/data, /srv:/srv]", "[/srv:/srv, data:/data]");
  assert.equal(serviceSpecDigest(web(scaled)), serviceSpecDigest(web()));
  assert.equal(serviceSpecDigest(web(reordered)), serviceSpecDigest(web()));
});

Deno.test("serviceSpecDigest() covers named volume definitions when given the project", () => {
  const plain = loadText(BASE, { files: { "/proj/web.env": "" } }).project;
  const driven = loadText(BASE.replace("data: {}", "data: {driver: local, driver_opts: {type: nfs}}"), {
    files: { "/proj/web.env": "" },
  }).project;
  assert.notEqual(
    serviceSpecDigest(driven.services.web, driven),
    serviceSpecDigest(plain.services.web, plain),
  );
});

Deno.test("compareServiceSpecs() says UpToDate for planner-only changes", () => {
  const changed = web(BASE.replace("replicas: 2", "replicas: 4\n      update_config: {order: stop-first}"));
  assert.deepEqual(compareServiceSpecs(web(), changed), { change: "UpToDate", recreate: [], update: [] });
});

Deno.test("compareServiceSpecs() says NeedsUpdate for CPU and memory limits only", () => {
  const changed = web(
    BASE.replace("replicas: 2", "replicas: 2\n      resources: {limits: {memory: 1g, cpus: '2'}}"),
  );
  assert.deepEqual(compareServiceSpecs(web(), changed), {
    change: "NeedsUpdate",
    recreate: [],
    update: ["resources.nanoCpus", "resources.memoryBytes"],
  });
});

Deno.test("compareServiceSpecs() says NeedsRecreate for what a container reads at creation", () => {
  const cases: [string, string][] = [
    [BASE.replace("nginx:1.27", "nginx:1.28"), "image"],
    [BASE.replace("80/http", "81/http"), "ports"],
    [BASE.replace("/srv:/srv", "/srv:/srv:ro"), "mounts"],
    [BASE.replace("    deploy:", "    x-machines: [m1]\n    deploy:"), "machines"],
    [BASE.replace("    deploy:", "    shm_size: 1g\n    deploy:"), "shmSizeBytes"],
  ];
  for (const [text, field] of cases) {
    const result = compareServiceSpecs(web(), web(text));
    assert.equal(result.change, "NeedsRecreate", field);
    assert.deepEqual(result.recreate, [field]);
  }
  assert.deepEqual(compareServiceSpecs(web(), web(BASE, "A=2\n")).recreate, ["environment"]);
});

Deno.test("compareServiceSpecs() recreates on a mode change, not for pull_policy always alone", () => {
  const always = web(BASE.replace("    deploy:", "    pull_policy: always\n    deploy:"));
  assert.deepEqual(compareServiceSpecs(always, always).recreate, []);
  const global = web(BASE.replace("replicas: 2", "mode: global"));
  assert.deepEqual(compareServiceSpecs(web(), global).recreate, ["mode"]);
});

Deno.test("canonicalJson() sorts keys at every depth and drops undefined", () => {
  assert.equal(
    canonicalJson({ b: [{ d: 1, c: 2 }], a: undefined, e: null }),
    '{"b":[{"c":2,"d":1}],"e":null}',
  );
});

Deno.test("compareServiceSpecs() reads fields an older Saved State lacks as their defaults", () => {
  const text = "services:\n  web:\n    image: nginx\n";
  const current = loadText(text).project.services.web;
  const older = { ...current } as Partial<typeof current>;
  for (const key of ["readOnly", "securityOpt", "devices", "deviceRequests", "pidsLimit", "files"] as const) {
    delete older[key];
  }
  assert.equal(compareServiceSpecs(older as typeof current, current).change, "UpToDate");
});
