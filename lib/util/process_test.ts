import assert from "node:assert/strict";
import { stopChild } from "./process.ts";

Deno.test("stopChild ends a child with SIGTERM and tolerates one already gone", async () => {
  const child = new Deno.Command("sleep", { args: ["30"], stdout: "null", stderr: "null" }).spawn();
  const status = await stopChild(child);
  assert.equal(status.signal, "SIGTERM");
  assert.equal((await stopChild(child)).signal, "SIGTERM");
});

Deno.test("stopChild sends SIGKILL when the child ignores SIGTERM past killAfterMs", async () => {
  const child = new Deno.Command("sh", {
    args: ["-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.getReader();
  await reader.read();
  reader.releaseLock();
  await child.stdout.cancel();
  const status = await stopChild(child, { killAfterMs: 200 });
  assert.equal(status.signal, "SIGKILL");
});
