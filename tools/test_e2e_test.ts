// The e2e runner's grouping: every file runs exactly once, unknown (new) files and the costliest start first, and
// every file named in COST, ONE_LANE or ALONE exists, so a rename cannot silently move a file out of its place;
// the task's description states the default number of files at once.
import { deepEqual, equal } from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  ALONE,
  COST,
  costLines,
  DEFAULT_JOBS,
  failureDigest,
  fileSeconds,
  groups,
  minutes,
  ONE_LANE,
  startOrder,
  testFiles,
} from "./test_e2e.ts";

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

Deno.test("fileSeconds: per file, the sum of its tests' times, steps not counted twice", () => {
  const junit = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="deno test" tests="6" failures="0" errors="0" time="9.000">
    <testsuite name="./tests/a_test.ts" tests="5" disabled="0" errors="0" failures="0">
        <testcase name="outer &gt; not a step" classname="./tests/a_test.ts" time="0.500" line="1" col="6">
        </testcase>
        <testcase name="outer" classname="./tests/a_test.ts" time="3.250" line="1" col="6">
        </testcase>
        <testcase name="second" classname="./tests/a_test.ts" time="1.000" line="6" col="6">
        </testcase>
        <testcase name="outer &gt; s1" classname="./tests/a_test.ts" time="2.000" line="3" col="11">
        </testcase>
        <testcase name="outer &gt; s1 &gt; n" classname="./tests/a_test.ts" time="1.000" line="4" col="47">
        </testcase>
    </testsuite>
    <testsuite name="./tests/b_test.ts" tests="1" disabled="0" errors="0" failures="1">
        <testcase name="it&apos;s &quot;b&quot;" classname="./tests/b_test.ts" time="4.000" line="1" col="6">
            <failure message="boom">boom</failure>
        </testcase>
    </testsuite>
</testsuites>`;
  // "outer > not a step" is prefixed by "outer", so it counts as outer's step: a test name with " > " in it is
  // rare, and the times order the files, nothing more.
  deepEqual(fileSeconds(junit), { "tests/a_test.ts": 4.25, "tests/b_test.ts": 4 });
  deepEqual(fileSeconds(""), {});
});

Deno.test("costLines: COST entries, longest first, ties by name; minutes: m and ss", () => {
  deepEqual(costLines({ "tests/b_test.ts": 4.4, "tests/a_test.ts": 60.6, "tests/c_test.ts": 4.4 }), [
    `  "tests/a_test.ts": 61,`,
    `  "tests/b_test.ts": 4,`,
    `  "tests/c_test.ts": 4,`,
  ]);
  equal(minutes(637_400), "10m37s");
  equal(minutes(5_000), "0m05s");
});

Deno.test("failureDigest: each failed test or step with its message's start; a test failing by its steps left out", () => {
  const junit = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="deno test" tests="4" failures="3" errors="0" time="0.018">
    <testsuite name="./tests/a_test.ts" tests="4" disabled="0" errors="0" failures="3">
        <testcase name="outer" classname="./tests/a_test.ts" time="0.004" line="1" col="6">
            <failure message="1 test step failed">1 test step failed.</failure>
        </testcase>
        <testcase name="plain" classname="./tests/a_test.ts" time="0.001" line="5" col="6">
            <failure message="Uncaught Error: plain fail">Error: plain fail
    at file:///tmp/a_test.ts:5:34</failure>
        </testcase>
        <testcase name="outer &gt; s1" classname="./tests/a_test.ts" time="0.000" line="2" col="11">
        </testcase>
        <testcase name="outer &gt; s2 fails" classname="./tests/a_test.ts" time="0.001" line="3" col="11">
            <failure message="AssertionError: boom &lt;x&gt; &amp; &quot;y&quot;
second
third">AssertionError: boom</failure>
        </testcase>
    </testsuite>
</testsuites>`;
  deepEqual(failureDigest(junit, 2), [
    "tests/a_test.ts:5 plain",
    "    Uncaught Error: plain fail",
    "tests/a_test.ts:3 outer > s2 fails",
    `    AssertionError: boom <x> & "y"`,
    "    second",
    "    … 1 more line",
  ]);
  deepEqual(failureDigest(junit.replaceAll(/<failure[\s\S]*?<\/failure>/g, "")), []);
});

Deno.test("the test:e2e task's description states the runner's default DENO_JOBS", () => {
  const config = JSON.parse(Deno.readTextFileSync(join(ROOT, "deno.json")));
  const said = String(config.tasks["test:e2e"].description).match(/DENO_JOBS \(default (\d+)\)/)?.[1];
  equal(said, String(DEFAULT_JOBS));
});
