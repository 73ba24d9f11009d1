import assert from "node:assert/strict";
import { dockerdConfigProblem } from "./dockerd.ts";

Deno.test("dockerdConfigProblem accepts registry hosts and a bounded attempt count, and names what it refuses", () => {
  assert.equal(
    dockerdConfigProblem({ insecureRegistries: ["192.0.2.1:5000", "registry.lan"], maxDownloadAttempts: 1 }),
    undefined,
  );
  assert.equal(dockerdConfigProblem({}), undefined);
  assert.match(
    dockerdConfigProblem({ insecureRegistries: ["http://x:5000"] }) ?? "",
    /insecure registry "http:\/\/x:5000" is not HOST or HOST:PORT/,
  );
  assert.match(dockerdConfigProblem({ insecureRegistries: ['a", "b'] }) ?? "", /is not HOST/);
  assert.match(dockerdConfigProblem({ maxDownloadAttempts: 0 }) ?? "", /from 1 to 20: got 0/);
  assert.match(dockerdConfigProblem({ maxDownloadAttempts: Number("x") }) ?? "", /got NaN/);
});
