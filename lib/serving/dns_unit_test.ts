import assert from "node:assert/strict";
import { RUNTIME_UNITS_ENV, systemdRuns } from "./dns_unit.ts";

Deno.test("systemdRuns() follows what the daemon's unit says, never a probe of /run/systemd/system", () => {
  assert.equal(systemdRuns((name) => name === RUNTIME_UNITS_ENV ? "systemd" : undefined), true);
  assert.equal(systemdRuns(() => undefined), false);
  assert.equal(systemdRuns(() => "yes"), false);
});
