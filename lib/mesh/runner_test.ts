import assert from "node:assert/strict";
import { MeshError } from "./errors.ts";
import { hostRunner } from "./runner.ts";

const SCRIPT = 'printf "out $X"; printf err >&2; exit 3';

Deno.test("hostRunner() returns a command's exit code, output and error output", async () => {
  const result = await hostRunner().run("sh", ["-c", SCRIPT], { env: { X: "1" } });
  assert.deepEqual(result, { code: 3, stdout: "out 1", stderr: "err" });
});

Deno.test("hostRunner() returns the same for a detached command", async () => {
  const result = await hostRunner().run("sh", ["-c", SCRIPT], { env: { X: "2" }, detached: true });
  assert.deepEqual(result, { code: 3, stdout: "out 2", stderr: "err" });
});

Deno.test("hostRunner() names a missing command", async () => {
  for (const detached of [false, true]) {
    await assert.rejects(
      () => hostRunner().run("ployz-no-such-command", [], { detached }),
      (error) =>
        error instanceof MeshError && /"ployz-no-such-command": command not found/.test(error.message),
    );
  }
});
