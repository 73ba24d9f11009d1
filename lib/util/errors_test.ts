import assert from "node:assert/strict";
import { CodedError, isErrorCode, messageOf } from "./errors.ts";

Deno.test("CodedError carries its code, a copy of its details and its cause", () => {
  const cause = new Error("raw");
  const details = { file: "a.yaml" };
  const error = new CodedError("invalid_argument", 'Cannot parse "a.yaml"', { details, cause });
  details.file = "b.yaml";
  assert.equal(error.code, "invalid_argument");
  assert.deepEqual(error.details, { file: "a.yaml" });
  assert.equal(error.cause, cause);
  assert.ok(error instanceof Error);
});

Deno.test("isErrorCode accepts the shared codes only", () => {
  assert.ok(isErrorCode("busy"));
  assert.ok(!isErrorCode("ENOENT"));
  assert.ok(!isErrorCode(undefined));
});

Deno.test("messageOf gives an Error's message and any other thrown value as text", () => {
  assert.equal(messageOf(new CodedError("busy", "Machine is busy")), "Machine is busy");
  assert.equal(messageOf(new TypeError("bad")), "bad");
  assert.equal(messageOf("plain text"), "plain text");
  assert.equal(messageOf(42), "42");
  assert.equal(messageOf(undefined), "undefined");
});
