import assert from "node:assert/strict";
import fc from "fast-check";
import { escapeInterpolation, interpolate } from "./interpolate.ts";

function value(text: string, env: Record<string, string> = {}): string {
  const result = interpolate(text, env);
  assert.ok(result.ok, result.ok ? "" : result.error);
  return result.value;
}

Deno.test("interpolate() substitutes plain and braced variables", () => {
  assert.equal(value("$A-${B}.$C_1", { A: "a", B: "b", C_1: "c" }), "a-b.c");
});

Deno.test("interpolate() distinguishes unset from empty in defaults", () => {
  assert.equal(value("${X:-d}", { X: "" }), "d");
  assert.equal(value("${X-d}", { X: "" }), "");
  assert.equal(value("${X-d}"), "d");
  assert.equal(value("${X:+r}", { X: "" }), "");
  assert.equal(value("${X+r}", { X: "" }), "r");
});

Deno.test("interpolate() expands nested defaults only when used", () => {
  assert.equal(value("${A:-${B:-${C}}}", { C: "c" }), "c");
  assert.equal(value("${A:-${B:?never}}", { A: "a" }), "a");
});

Deno.test("interpolate() fails on a missing required variable with its message", () => {
  assert.deepEqual(interpolate("${A:?tell me}", {}), {
    ok: false,
    error: 'required variable "A" is unset or empty: tell me',
  });
  assert.deepEqual(interpolate("${A?}", {}), { ok: false, error: 'required variable "A" is unset' });
  assert.deepEqual(interpolate("${A?}", { A: "" }), { ok: true, value: "", unset: [] });
});

Deno.test("interpolate() reports unset variables without defaults", () => {
  assert.deepEqual(interpolate("$A ${B}", {}), { ok: true, value: " ", unset: ["A", "B"] });
});

Deno.test("interpolate() refuses malformed templates", () => {
  for (const text of ["$", "a $1", "${", "${A", "${}", "${A:x}", "${1A}"]) {
    const result = interpolate(text, {});
    assert.equal(result.ok, false, text);
  }
});

Deno.test("interpolate() does not read inherited properties as variables", () => {
  assert.deepEqual(interpolate("${toString}", {}), { ok: true, value: "", unset: ["toString"] });
});

Deno.test("interpolate() gives back any text escaped with escapeInterpolation()", () => {
  fc.assert(
    fc.property(fc.string(), fc.dictionary(fc.constantFrom("A", "B", "HOME"), fc.string()), (text, env) => {
      assert.equal(value(escapeInterpolation(text), env), text);
    }),
  );
});

Deno.test("interpolate() leaves text without $ unchanged", () => {
  fc.assert(
    fc.property(fc.string().filter((text) => !text.includes("$")), (text) => {
      assert.equal(value(text, { A: "x" }), text);
    }),
  );
});
