import assert from "node:assert/strict";
import { parseEnvFile } from "./env_file.ts";

Deno.test("parseEnvFile() reads comments, export, quotes and inline comments", () => {
  const text = [
    "# comment",
    "",
    "export A=1",
    "B = spaced value  # trailing",
    "C='single $A # kept'",
    'D="double\\t$A"',
    "E=",
    "F=a#b",
  ].join("\n");
  const parsed = parseEnvFile(text, {});
  assert.deepEqual(parsed.problems, []);
  assert.deepEqual(parsed.vars, {
    A: "1",
    B: "spaced value",
    C: "single $A # kept",
    D: "double\t1",
    E: "",
    F: "a#b",
  });
});

Deno.test("parseEnvFile() takes bare keys from the environment and leaves out unset ones", () => {
  assert.deepEqual(parseEnvFile("HOME\nNOPE\n", { HOME: "/root" }).vars, { HOME: "/root" });
});

Deno.test("parseEnvFile() reads multi-line double-quoted values", () => {
  assert.deepEqual(parseEnvFile('KEY="line1\nline2"\nNEXT=1\n', {}).vars, { KEY: "line1\nline2", NEXT: "1" });
});

Deno.test("parseEnvFile() reports bad lines with their numbers", () => {
  const parsed = parseEnvFile("OK=1\n=nokey\nX='open\nY=${Z:?needed}\n", {});
  assert.deepEqual(parsed.problems.map((problem) => problem.line), [2, 3]);
  assert.match(parsed.problems[1].message, /unterminated ' quote/);
});

Deno.test("parseEnvFile() reports a missing required variable", () => {
  const parsed = parseEnvFile("Y=${Z:?needed}\n", {});
  assert.deepEqual(parsed.problems, [{
    line: 1,
    message: 'value of "Y": required variable "Z" is unset or empty: needed',
  }]);
});
