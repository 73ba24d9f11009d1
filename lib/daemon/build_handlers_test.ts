import assert from "node:assert/strict";
import { UPLOAD_IDLE_MS, uploadIdleMsFromEnv } from "./build_handlers.ts";

Deno.test("uploadIdleMsFromEnv() lowers the abandoned-upload bound only within 1 s to the default", () => {
  const of = (value: string | undefined): number => uploadIdleMsFromEnv(() => value);
  assert.equal(of(undefined), UPLOAD_IDLE_MS);
  assert.equal(of("8000"), 8000);
  assert.equal(of("1000"), 1000);
  for (const bad of ["", "999", "0", "-5", "2.5", "abc", String(UPLOAD_IDLE_MS + 1)]) {
    assert.equal(of(bad), UPLOAD_IDLE_MS, bad);
  }
});
