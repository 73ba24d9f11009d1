import { deepEqual, equal, ok } from "node:assert/strict";
import { readBodyCapped } from "./body.ts";
import { streamedBody } from "./testing/mod.ts";

function endless(chunk: number): { request: Request; pulled: () => number } {
  const { body, pulled } = streamedBody(chunk);
  return { request: new Request("http://x/", { method: "POST", body }), pulled };
}

Deno.test("readBodyCapped() stops an endless chunked body at the first chunk past the cap", async () => {
  const { request, pulled } = endless(1000);
  equal(await readBodyCapped(request, 10_000), undefined);
  equal(pulled(), 11_000);
});

Deno.test("readBodyCapped() refuses a declared length over the cap without reading", async () => {
  const request = new Request("http://x/", {
    method: "POST",
    body: "x".repeat(20),
    headers: { "content-length": "20" },
  });
  equal(await readBodyCapped(request, 10), undefined);
  const garbage = new Request("http://x/", {
    method: "POST",
    body: "{}",
    headers: { "content-length": "many" },
  });
  equal(await readBodyCapped(garbage, 10), undefined);
});

Deno.test("readBodyCapped() returns a body up to the cap whole, and an absent body as empty", async () => {
  const text = "é".repeat(5);
  const bytes = await readBodyCapped(new Request("http://x/", { method: "POST", body: text }), 10);
  ok(bytes);
  equal(new TextDecoder().decode(bytes), text);
  deepEqual(await readBodyCapped(new Request("http://x/"), 10), new Uint8Array(0));
});
