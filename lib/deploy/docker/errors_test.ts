import assert from "node:assert/strict";
import { DockerError, sanitizeMessage, toDockerError } from "./errors.ts";

Deno.test("engine messages are sanitized for durable diagnostics", () => {
  assert.equal(
    sanitizeMessage("(HTTP code 400) bad parameter - invalid env PASSWORD=hunter2 in\nline two."),
    "invalid env PASSWORD=<redacted> in line two",
  );
  assert.ok(sanitizeMessage("x".repeat(1000)).length <= 300);
});

Deno.test("toDockerError maps status codes and socket failures to codes", () => {
  const cases: [unknown, string][] = [
    [{ statusCode: 404, json: { message: "No such container: web" } }, "not_found"],
    [{ statusCode: 409, json: { message: "Conflict." } }, "conflict"],
    [{ statusCode: 400, json: { message: "bad" } }, "invalid_argument"],
    [{ statusCode: 500, json: { message: "boom" } }, "internal"],
    [{ code: "ECONNREFUSED", message: "connect ECONNREFUSED" }, "unavailable"],
    [{ code: "ENOENT", message: "connect ENOENT" }, "unavailable"],
  ];
  for (const [raw, code] of cases) assert.equal(toDockerError('start container "web"', raw).code, code);
  const e = toDockerError('start container "web"', {
    statusCode: 404,
    json: { message: "No such container: web" },
  });
  assert.equal(e.message, `Cannot start container "web": No such container: web`);
  const same = new DockerError("conflict", "x");
  assert.equal(toDockerError("y", same), same);
});
