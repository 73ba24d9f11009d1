import assert from "node:assert/strict";
import type { ContainerEvent } from "../lib/deploy/mod.ts";
import { dockerTest } from "./support/docker.ts";

dockerTest("events follow start and die of owned containers only", async (s) => {
  const controller = new AbortController();
  const seen: ContainerEvent[] = [];
  // Replaying from just before the first create leaves no window between subscribing and acting.
  const sinceMs = Date.now() - 1_000;
  const done = (async () => {
    for await (const event of s.engine.events(controller.signal, { sinceMs })) {
      seen.push(event);
      if (event.action === "die") controller.abort();
    }
  })();
  try {
    const hand = await s.raw.createContainer({
      name: `ployz-test-${s.id}-hand`,
      Image: "ployz-test/busybox:1",
      Cmd: ["true"],
      Labels: { "ployz.test": s.id },
    });
    await hand.start();
    const made = await s.engine.createContainer(
      s.spec("ev", { cmd: ["sh", "-c", "sleep 0.2; exit 3"], env: { K: "v-secret" } }),
    );
    await s.engine.startContainer(made.id);
    const timeout = setTimeout(() => controller.abort(), 10_000);
    await done;
    clearTimeout(timeout);
    const actions = seen.map((e) => e.action);
    assert.deepEqual(actions, ["create", "start", "die"]);
    assert.ok(seen.every((e) => e.id === made.id));
    const die = seen.at(-1)!;
    assert.equal(die.exitCode, 3);
    assert.equal(die.labels["ployz.machine"], s.machineId);
    assert.ok(!JSON.stringify(seen).includes("v-secret"));
  } finally {
    controller.abort();
    await done;
  }
});
