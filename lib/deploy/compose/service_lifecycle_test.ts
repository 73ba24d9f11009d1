// `healthcheck` and `depends_on` as loadCompose() reads them (service_lifecycle.ts).
import assert from "node:assert/strict";
import { loadText, onlyIssue, problems } from "./test_helpers.ts";

Deno.test("loadCompose() checks depends_on targets, cycles and conditions", () => {
  const text = [
    "services:",
    "  a:",
    "    image: x",
    "    depends_on: [b, ghost]",
    "  b:",
    "    image: x",
    "    depends_on:",
    "      a:",
    "        condition: service_finished",
  ].join("\n");
  const list = problems(text);
  assert.deepEqual(list.map((item) => [item.line, item.path]), [
    [2, "services.a"],
    [4, "services.a.depends_on[1]"],
    [9, "services.b.depends_on.a.condition"],
  ]);
  assert.match(list[0].message, /dependency cycle: "a" -> "b" -> "a"/);
  assert.match(list[1].message, /undefined service "ghost"/);
  assert.match(list[2].message, /invalid condition "service_finished"/);
});

Deno.test("loadCompose() reads depends_on conditions; a Service waited for to complete must run once", () => {
  const text = [
    "services:",
    "  migrate: {image: x, deploy: {replicas: 2}}",
    "  web:",
    "    image: x",
    "    depends_on:",
    "      migrate: {condition: service_completed_successfully}",
  ].join("\n");
  onlyIssue(problems(text), {
    line: 3,
    path: "services.web.depends_on",
    message: /waits for "migrate" to complete, so "migrate" must run once/,
  });
  const { project } = loadText(text.replace("replicas: 2", "replicas: 1"));
  assert.deepEqual(project.services.web.dependsOnConditions, { migrate: "service_completed_successfully" });
});

Deno.test("loadCompose() warns that healthcheck start_interval is not applied, and still reads it", () => {
  const { project, warnings } = loadText(
    "services:\n  web:\n    image: b\n    healthcheck:\n      test: [CMD, 'true']\n      interval: 30s\n" +
      "      start_interval: 2s\n",
  );
  assert.equal(warnings.length, 1);
  assert.match(warnings[0].message, /key "start_interval" is not applied: Docker Engine API v1\.41/);
  assert.equal(warnings[0].line, 7);
  assert.equal(warnings[0].path, "services.web.healthcheck.start_interval");
  const check = project.services.web.healthcheck;
  assert.equal(check.kind === "configured" ? check.startIntervalMs : undefined, 2_000);
});

Deno.test("loadCompose() warns that depends_on restart: true is not applied, and still loads", () => {
  const { warnings } = loadText(
    "services:\n  db: {image: b}\n  web:\n    image: b\n    depends_on:\n      db: {condition: service_started, restart: true}\n",
  );
  assert.equal(warnings.length, 1);
  assert.match(warnings[0].message, /key "restart" is not applied: Ployz does not restart dependants/);
  assert.equal(warnings[0].line, 6);
});
