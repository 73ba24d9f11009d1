import assert from "node:assert/strict";
import { observeContainer, observeEvent } from "./observe.ts";

Deno.test("observeContainer keeps env keys and drops values and the spec label", () => {
  const o = observeContainer(
    {
      Id: "abc",
      Name: "/web",
      Image: "sha256:1",
      State: {
        Status: "exited",
        ExitCode: 137,
        OOMKilled: true,
        StartedAt: "2025-01-01T00:00:00Z",
        FinishedAt: "0001-01-01T00:00:00Z",
      },
      Config: {
        Image: "web:1",
        Env: ["TOKEN=secret", "A=b"],
        Labels: { "ployz.managed": "1", "ployz.machine": "m1", "ployz.spec": "{}" },
      },
      HostConfig: { LogConfig: { Type: "local" } },
      NetworkSettings: { Networks: { ployz: { IPAddress: "10.0.0.2", Aliases: ["web"] } } },
    },
    "m1",
    "ployz",
  );
  assert.equal(o.name, "web");
  assert.equal(o.owned, true);
  assert.deepEqual(o.envKeys, ["TOKEN", "A"]);
  assert.ok(!JSON.stringify(o).includes("secret"));
  assert.equal(o.labels["ployz.spec"], undefined);
  assert.equal(o.exitCode, 137);
  assert.equal(o.oomKilled, true);
  assert.equal(o.finishedAt, null);
  assert.deepEqual(o.address, { network: "ployz", ipv4: "10.0.0.2", ipv6: null, aliases: ["web"] });
});

Deno.test("observeEvent reads health and exit codes and ignores other actions", () => {
  const health = observeEvent({
    Type: "container",
    Action: "health_status: unhealthy",
    Actor: { ID: "abc", Attributes: { name: "web", "ployz.slot": "0", image: "x" } },
    timeNano: 1_700_000_000_123_000_000,
  });
  assert.equal(health?.action, "health_status");
  assert.equal(health?.health, "unhealthy");
  assert.deepEqual(health?.labels, { "ployz.slot": "0" });
  assert.equal(health?.at, 1_700_000_000_123);
  assert.equal(
    observeEvent({ Type: "container", Action: "die", Actor: { ID: "a", Attributes: { exitCode: "3" } } })
      ?.exitCode,
    3,
  );
  assert.equal(observeEvent({ Type: "container", Action: "exec_start: sh", Actor: { ID: "a" } }), undefined);
  assert.equal(observeEvent({ Type: "network", Action: "connect", Actor: { ID: "a" } }), undefined);
});
