import assert from "node:assert/strict";
import { UsageError } from "../../lib/cli/mod.ts";
import { durationFlag } from "./duration_flag.ts";

Deno.test("durationFlag reads a duration within its bounds, else names the option and the bound", () => {
  const bounds = { min: 1000, max: 1_800_000 };
  assert.equal(durationFlag({}, "monitor", bounds), undefined);
  assert.equal(durationFlag({ monitor: "1m30s" }, "monitor", bounds), 90_000);
  assert.equal(durationFlag({ monitor: "30m" }, "monitor", bounds), 1_800_000);
  const refused: [string, RegExp][] = [
    ["2h", /^Invalid value for "--monitor": at most 30m, got "2h"$/],
    ["500ms", /^Invalid value for "--monitor": at least 1s, got "500ms"$/],
    ["soon", /^Invalid value for "--monitor": invalid duration "soon"/],
  ];
  for (const [value, message] of refused) {
    assert.throws(() => durationFlag({ monitor: value }, "monitor", bounds), (e: unknown) => {
      assert.ok(e instanceof UsageError);
      assert.match(e.message, message);
      return true;
    });
  }
  assert.equal(durationFlag({ monitor: "0s" }, "monitor", { max: 1000 }), 0);
});
