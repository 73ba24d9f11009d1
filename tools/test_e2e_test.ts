// The e2e runner's grouping: every file runs exactly once, unknown (new) files and the costliest start first, and
// every file named in COST or SERIAL exists, so a rename cannot silently move a file out of its place.
import { deepEqual, equal } from "node:assert/strict";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { COST, groups, SERIAL, startOrder, testFiles } from "./test_e2e.ts";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

Deno.test("startOrder: unknown files first, then by cost, ties by name", () => {
  const cost = { "t/a_test.ts": 10, "t/b_test.ts": 50, "t/c_test.ts": 10 };
  deepEqual(
    startOrder(["t/a_test.ts", "t/b_test.ts", "t/c_test.ts", "t/new_test.ts", "t/d_test.ts"], cost),
    ["t/d_test.ts", "t/new_test.ts", "t/b_test.ts", "t/a_test.ts", "t/c_test.ts"],
  );
});

Deno.test("groups: each file once, serial files only in the serial group", () => {
  const files = ["t/a_test.ts", "t/b_test.ts", "t/c_test.ts"];
  const split = groups(files, { "t/a_test.ts": 1 }, { "t/b_test.ts": "holds a fixed host port" });
  deepEqual(split, { concurrent: ["t/c_test.ts", "t/a_test.ts"], serial: ["t/b_test.ts"] });
  deepEqual([...split.concurrent, ...split.serial].sort(), files);
});

Deno.test("testFiles finds every tests/*_test.ts, and COST and SERIAL name only files that exist", () => {
  const files = testFiles(ROOT, "tests");
  const listed = [...Deno.readDirSync(`${ROOT}/tests`)].filter((e) => e.name.endsWith("_test.ts")).length;
  equal(files.filter((f) => /^tests\/[^/]+_test\.ts$/.test(f)).length, listed);
  deepEqual([...Object.keys(COST), ...Object.keys(SERIAL)].filter((f) => !files.includes(f)), []);
});
