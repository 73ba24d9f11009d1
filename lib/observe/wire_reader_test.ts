import { deepEqual } from "node:assert/strict";
import { LOG_HISTORY_RULES, TAIL_LOGS_RULES } from "./wire.ts";
import { METRIC_HISTORY_RULES } from "./metrics/wire.ts";
import { readWire } from "./wire_reader.ts";

Deno.test("readWire accepts a well-formed request as it is", () => {
  const body = { service: "api", since: "0", limit: 10 };
  deepEqual(readWire(body, LOG_HISTORY_RULES), { ok: true, value: body });
  deepEqual(readWire({}, TAIL_LOGS_RULES), { ok: true, value: {} });
  deepEqual(readWire({ machine: true, since: "0", step: 60 }, METRIC_HISTORY_RULES).ok, true);
});

Deno.test("readWire names every broken field: missing, wrong type, out of range, unknown", () => {
  deepEqual(readWire({ service: "", since: 5, limit: 0, extra: 1 }, LOG_HISTORY_RULES), {
    ok: false,
    issues: [
      { path: "service", message: "expected at least 1 characters" },
      { path: "since", message: "expected a string" },
      { path: "limit", message: "expected an integer from 1 to 10000" },
      { path: "extra", message: "unknown field" },
    ],
  });
  deepEqual(readWire({ service: "api" }, LOG_HISTORY_RULES), {
    ok: false,
    issues: [{ path: "since", message: "required" }, { path: "limit", message: "required" }],
  });
  deepEqual(readWire({ backlog: 1.5, grep: "x".repeat(1025) }, TAIL_LOGS_RULES), {
    ok: false,
    issues: [
      { path: "grep", message: "expected at most 1024 characters" },
      { path: "backlog", message: "expected an integer" },
    ],
  });
  deepEqual(readWire({ machine: false, since: "0" }, METRIC_HISTORY_RULES), {
    ok: false,
    issues: [{ path: "machine", message: "expected true" }],
  });
  for (const body of [null, [], "x", 3]) {
    deepEqual(readWire(body, TAIL_LOGS_RULES), {
      ok: false,
      issues: [{ path: "", message: "expected an object" }],
    });
  }
});
