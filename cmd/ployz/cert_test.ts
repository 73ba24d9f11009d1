import assert from "node:assert/strict";
import { certificateTable } from "./cert.ts";

Deno.test("cert ls names the renewing Machine, shows a pending renewal and the last error", () => {
  const table = certificateTable([
    {
      hostname: "app.example.com",
      source: "acme",
      servable: true,
      issuer: "CN=R11",
      "not_after": "2027-03-01T00:00:00.000Z",
      "renewed_at": "2026-12-01T00:00:00.000Z",
      "renewed_by": "id-1",
      "renew_requested_at": "2026-12-02T00:00:00.000Z",
      "last_error": "too many certificates already issued",
      "last_error_at": "2026-12-02T00:00:05.000Z",
    },
    { hostname: "b.example.com", source: "acme", servable: false, problem: "no certificate" },
  ], new Map([["id-1", "m1"]]));
  const [head, first, second] = table.trim().split("\n");
  assert.match(head, /^HOSTNAME +SOURCE +ISSUER +NOT AFTER +RENEWED BY +STATUS +LAST ERROR$/);
  assert.match(
    first,
    /^app\.example\.com +acme +CN=R11 +2027-03-01T00:00:00\.000Z +m1 +renewal asked +2026-12-02/,
  );
  assert.match(first, /too many certificates already issued$/);
  assert.match(second, /^b\.example\.com +acme +- +- +- +not served: no certificate +-$/);
  assert.equal(certificateTable([]), "No certificates\n");
});
