import assert from "node:assert/strict";
import { dockerTest } from "./support/docker.ts";

const probe = { intervalMs: 200, timeoutMs: 2_000, retries: 2 };

dockerTest("a container whose healthcheck passes is healthy", async (s) => {
  const made = await s.engine.createContainer(s.spec("healthy", {
    cmd: ["httpd", "-f", "-p", "80", "-h", "/www"],
    healthcheck: { test: ["CMD-SHELL", "wget -q -O /dev/null http://127.0.0.1/ || exit 1"], ...probe },
  }));
  await s.engine.startContainer(made.id);
  const result = await s.engine.waitHealthy(made.id, { deadlineMs: 15_000, monitorMs: 300 });
  assert.equal(result.healthy, true, JSON.stringify(result));
  assert.equal(result.healthy && result.via, "healthcheck");
  assert.equal(result.evidence.health, "healthy");
});

dockerTest("a container whose healthcheck fails is reported unhealthy with its probe output", async (s) => {
  const made = await s.engine.createContainer(s.spec("unhealthy", {
    healthcheck: { test: ["CMD-SHELL", "echo probe-says-no; exit 1"], ...probe },
  }));
  await s.engine.startContainer(made.id);
  const result = await s.engine.waitHealthy(made.id, { deadlineMs: 15_000, monitorMs: 300 });
  assert.equal(result.healthy, false);
  assert.ok(!result.healthy);
  assert.equal(result.reason, "unhealthy");
  assert.equal(result.evidence.health, "unhealthy");
  assert.ok(result.evidence.healthLog.length >= 2);
  assert.equal(result.evidence.healthLog.at(-1)?.exitCode, 1);
  assert.match(result.message, /is unhealthy: last probe exited 1 with "probe-says-no"/);
});

dockerTest("a healthcheck that never passes in time times out", async (s) => {
  const made = await s.engine.createContainer(s.spec("slow", {
    healthcheck: { test: ["CMD-SHELL", "exit 1"], intervalMs: 60_000, timeoutMs: 1_000, retries: 3 },
  }));
  await s.engine.startContainer(made.id);
  const result = await s.engine.waitHealthy(made.id, { deadlineMs: 1_000, monitorMs: 200 });
  assert.ok(!result.healthy);
  assert.equal(result.reason, "timed_out");
  assert.equal(result.evidence.health, "starting");
});

dockerTest("without a healthcheck a container must stay running through the monitor period", async (s) => {
  const steady = await s.engine.createContainer(s.spec("steady"));
  await s.engine.startContainer(steady.id);
  const ok = await s.engine.waitHealthy(steady.id, { monitorMs: 800 });
  assert.equal(ok.healthy && ok.via, "monitor");
  assert.ok(ok.elapsedMs >= 800);

  const crash = await s.engine.createContainer(s.spec("crash", { cmd: ["sh", "-c", "sleep 0.3; exit 4"] }));
  await s.engine.startContainer(crash.id);
  const bad = await s.engine.waitHealthy(crash.id, { monitorMs: 3_000 });
  assert.ok(!bad.healthy);
  assert.equal(bad.reason, "exited");
  assert.equal(bad.evidence.exitCode, 4);
  assert.equal(bad.evidence.oomKilled, false);
  assert.match(bad.message, /exited with code 4/);
});

dockerTest("a container that restarts during the gate fails it", async (s) => {
  const made = await s.engine.createContainer(s.spec("loop", {
    cmd: ["sh", "-c", "sleep 0.3; exit 2"],
    restart: { policy: "always" },
  }));
  await s.engine.startContainer(made.id);
  const result = await s.engine.waitHealthy(made.id, { monitorMs: 5_000, pollMs: 100 });
  assert.ok(!result.healthy);
  assert.ok(result.reason === "restarted", JSON.stringify(result));
  assert.ok(result.evidence.restartCount >= 1);
});
