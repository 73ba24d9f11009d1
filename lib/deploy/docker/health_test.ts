import assert from "node:assert/strict";
import { healthDeadlineMs } from "./health.ts";

Deno.test("the default gate deadline follows the healthcheck", () => {
  assert.equal(healthDeadlineMs(undefined), 185_000);
  assert.equal(
    healthDeadlineMs({ Interval: 1e9, Timeout: 2e9, Retries: 2, StartPeriod: 4e9 }),
    4_000 + 3_000 * 2 + 5_000,
  );
});
