import assert from "node:assert/strict";
import { serviceSpecDigest } from "./spec.ts";
import { buildOf, loadText, onlyIssue, problems } from "./test_helpers.ts";

Deno.test("build: a string context names a directory beside the compose file; the image is <project>-<service>", () => {
  const { project, warnings } = loadText("services:\n  web:\n    build: ./web\n");
  assert.deepEqual(warnings, []);
  const web = project.services.web;
  assert.equal(web.image, "proj-web");
  assert.deepEqual(web.build, buildOf("/proj/web"));
});

Deno.test("build: the long form reads dockerfile, args (from the environment when bare), target, labels, cache_from", () => {
  const { project, warnings } = loadText(
    [
      "services:",
      "  api:",
      "    image: acme/api:dev",
      "    build:",
      "      context: api",
      "      dockerfile: docker/Dockerfile.prod",
      "      args: [VERSION=1.2, FROM_ENV, UNSET]",
      "      target: runtime",
      "      labels: {team: core}",
      "      cache_from: [acme/api:cache]",
      "      no_cache: true",
      "      shm_size: 1g",
      "",
    ].join("\n"),
    { env: { FROM_ENV: "yes" } },
  );
  const api = project.services.api;
  assert.equal(api.image, "proj-api");
  assert.deepEqual(api.build, {
    context: "/proj/api",
    dockerfile: "docker/Dockerfile.prod",
    dockerfileInline: null,
    args: { FROM_ENV: "yes", VERSION: "1.2" },
    target: "runtime",
    labels: { team: "core" },
    cacheFrom: ["acme/api:cache"],
    noCache: true,
    image: "acme/api:dev",
  });
  onlyIssue(warnings, {
    line: 12,
    path: "services.api.build.shm_size",
    message: /only tunes a build and is ignored/,
  });
});

Deno.test("build: ssh and build secrets are refused with the reason", () => {
  const issues = problems(
    "services:\n  web:\n    build:\n      context: .\n      ssh: [default]\n      secrets: [token]\n",
  );
  assert.equal(issues.length, 2);
  assert.match(issues[0].message, /key "ssh" is not supported: the build runs on a Machine .* SSH agent/);
  assert.equal(issues[0].line, 5);
  assert.match(issues[1].message, /key "secrets" is not supported yet: build secrets/);
});

Deno.test("build: a URL context, a Dockerfile outside the context and both dockerfile forms are refused", () => {
  onlyIssue(problems("services:\n  web:\n    build: https://github.com/acme/web.git\n"), {
    line: 3,
    path: "services.web.build",
    message: /is a URL: only a directory on the operator's side/,
  });
  onlyIssue(problems("services:\n  web:\n    build: {context: ., dockerfile: ../Dockerfile}\n"), {
    line: 3,
    path: "services.web.build.dockerfile",
    message: /expected a path inside the build context/,
  });
  onlyIssue(
    problems("services:\n  web:\n    build: {context: ., dockerfile: D, dockerfile_inline: 'FROM x'}\n"),
    { line: 3, path: "services.web.build.dockerfile_inline", message: /exclude each other/ },
  );
  onlyIssue(problems("services:\n  web:\n    build: {context: ., labels: {ployz.x: y}}\n"), {
    line: 3,
    path: "services.web.build.labels.ployz.x",
    message: /reserved/,
  });
});

Deno.test("build: where the context lies is no container setting; the tagged image is", () => {
  const a = loadText("services:\n  web:\n    build: ./a\n").project.services.web;
  const b = loadText("services:\n  web:\n    build: ./b\n").project.services.web;
  assert.equal(serviceSpecDigest(a), serviceSpecDigest(b));
  assert.notEqual(
    serviceSpecDigest({ ...a, image: "proj-web:1" }),
    serviceSpecDigest({ ...a, image: "proj-web:2" }),
  );
});

Deno.test("build: pull_policy build is accepted with build: (the image is never pulled) and refused without", () => {
  const { project } = loadText("services:\n  web:\n    build: .\n    pull_policy: build\n");
  assert.equal(project.services.web.pullPolicy, "never");
  onlyIssue(problems("services:\n  web:\n    image: nginx\n    pull_policy: build\n"), {
    line: 4,
    path: "services.web.pull_policy",
    message: /pull policy "build" needs a "build:" section/,
  });
});
