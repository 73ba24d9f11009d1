// The e2e runner's grouping: every file runs exactly once, unknown (new) files and the costliest start first, and
// every file named in COST, ONE_LANE or ALONE exists, so a rename cannot silently move a file out of its place.
import { deepEqual, equal } from "node:assert/strict";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { ALONE, COST, groups, ONE_LANE, startOrder, testFiles } from "./test_e2e.ts";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

Deno.test("startOrder: unknown files first, then by cost, ties by name", () => {
  const cost = { "t/a_test.ts": 10, "t/b_test.ts": 50, "t/c_test.ts": 10 };
  deepEqual(
    startOrder(["t/a_test.ts", "t/b_test.ts", "t/c_test.ts", "t/new_test.ts", "t/d_test.ts"], cost),
    ["t/d_test.ts", "t/new_test.ts", "t/b_test.ts", "t/a_test.ts", "t/c_test.ts"],
  );
});

Deno.test("groups: each file once; lane and alone files only in their group, alone winning", () => {
  const files = ["t/a_test.ts", "t/b_test.ts", "t/c_test.ts", "t/d_test.ts", "t/e_test.ts"];
  const split = groups(
    files,
    { "t/a_test.ts": 1 },
    { "t/b_test.ts": "a fixed name", "t/e_test.ts": "a fixed name" },
    { "t/d_test.ts": "CPU figures", "t/e_test.ts": "CPU figures" },
  );
  deepEqual(split, {
    concurrent: ["t/c_test.ts", "t/a_test.ts"],
    lane: ["t/b_test.ts"],
    alone: ["t/d_test.ts", "t/e_test.ts"],
  });
  deepEqual([...split.concurrent, ...split.lane, ...split.alone].sort(), files);
});

Deno.test("testFiles finds every tests/*_test.ts, and COST, ONE_LANE and ALONE name only files that exist", () => {
  const files = testFiles(ROOT, "tests");
  const listed = [...Deno.readDirSync(`${ROOT}/tests`)].filter((e) => e.name.endsWith("_test.ts")).length;
  equal(files.filter((f) => /^tests\/[^/]+_test\.ts$/.test(f)).length, listed);
  const named = [...Object.keys(COST), ...Object.keys(ONE_LANE), ...Object.keys(ALONE)];
  deepEqual(named.filter((f) => !files.includes(f)), []);
});
