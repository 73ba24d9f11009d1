// `deploy.update_config` as loadCompose() reads it (service_deploy.ts).
import assert from "node:assert/strict";
import { loadText, onlyIssue, problems } from "./test_helpers.ts";

function withUpdate(lines: string[]): string {
  return ["services:", "  web:", "    image: x", "    deploy:", "      update_config:", ...lines].join("\n");
}

Deno.test("loadCompose() reads update_config.parallelism: a count, 0 for all, none by default", () => {
  for (const [written, read] of [["2", 2], ["0", 0], ['"3"', 3]] as const) {
    const { project, warnings } = loadText(withUpdate([`        parallelism: ${written}`]));
    assert.deepEqual(warnings, []);
    assert.equal(project.services.web.update.parallelism, read);
  }
  const { project } = loadText("services:\n  web:\n    image: x\n");
  assert.deepEqual(project.services.web.update, {
    order: null,
    monitorMs: null,
    parallelism: null,
    delayMs: null,
  });
});

Deno.test("loadCompose() refuses a parallelism that is not a whole number, naming its line", () => {
  for (const written of ["-1", "two", "1.5"]) {
    onlyIssue(problems(withUpdate(["        order: stop-first", `        parallelism: ${written}`])), {
      line: 7,
      path: "services.web.deploy.update_config.parallelism",
      message: /expected a whole number/,
    });
  }
});

Deno.test("loadCompose() reads update_config.delay as a duration; failure_action is ignored", () => {
  const { project, warnings } = loadText(
    withUpdate(["        parallelism: 2", "        delay: 1m30s", "        failure_action: rollback"]),
  );
  assert.equal(project.services.web.update.delayMs, 90_000);
  assert.equal(project.services.web.update.parallelism, 2);
  assert.equal(warnings.length, 1);
  assert.equal(warnings[0].line, 8);
  assert.equal(warnings[0].path, "services.web.deploy.update_config.failure_action");
  assert.match(warnings[0].message, /is not supported by Ployz and is ignored/);
  onlyIssue(problems(withUpdate(["        delay: 2h"])), {
    line: 6,
    path: "services.web.deploy.update_config.delay",
    message: /update delay must be at most 1h, got 2h/,
  });
  onlyIssue(problems(withUpdate(["        delay: soon"])), {
    line: 6,
    path: "services.web.deploy.update_config.delay",
    message: /soon/,
  });
});

Deno.test("loadCompose() bounds update_config.monitor at 30m", () => {
  assert.equal(
    loadText(withUpdate(["        monitor: 30m"])).project.services.web.update.monitorMs,
    1_800_000,
  );
  onlyIssue(problems(withUpdate(["        monitor: 2h"])), {
    line: 6,
    path: "services.web.deploy.update_config.monitor",
    message: /update monitor must be at most 30m, got 2h/,
  });
});
