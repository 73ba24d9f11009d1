import assert from "node:assert/strict";
import { goneVerdict, notQuiet } from "./gone_evidence.ts";

const NOW = Date.parse("2026-12-01T21:40:00Z");
const SILENT = { answered: false as const, ms: 3_000, reason: "no answer within 3 s" };

Deno.test("a peer heard from inside the quiet window is not gone, and the refusal says when it will be", () => {
  const evidence = { now: NOW, lastHeard: NOW - 4_000, quietMs: 30_000 };
  const quiet = notQuiet("m1", evidence);
  assert.equal(quiet?.acceptAfter, "2026-12-01T21:40:26.000Z");
  assert.match(
    quiet!.observed,
    /^"m1" last heard from it 4 s ago \(at 2026-12-01T21:39:56.000Z\) and it did not answer a probe over the mesh; .* for 30 s .*: try again after 2026-12-01T21:40:26.000Z \(in 26 s\)$/,
  );
  // Even a probe that failed does not make a peer heard 4 s ago gone; the refusal names both facts.
  const verdict = goneVerdict("m1", evidence, SILENT);
  assert.deepEqual(verdict, {
    gone: false,
    observed: `${quiet!.observed} (no answer within 3 s)`,
    acceptAfter: "2026-12-01T21:40:26.000Z",
  });
  // A peer that answers is alive: no waiting helps, so no time is named.
  assert.deepEqual(goneVerdict("m1", evidence, { answered: true, ms: 3 }), {
    gone: false,
    observed: `it answered a probe from "m1" over the mesh just now (in 3 ms)`,
  });
});

Deno.test("a quiet peer that answers the probe is not gone; one that does not answer is", () => {
  const evidence = { now: NOW, lastHeard: NOW - 31_000, quietMs: 30_000 };
  assert.equal(notQuiet("m1", evidence), undefined);
  const answered = goneVerdict("m1", evidence, { answered: true, ms: 12 });
  assert.deepEqual(answered, {
    gone: false,
    observed: `it answered a probe from "m1" over the mesh just now (in 12 ms)`,
  });
  const silent = goneVerdict("m1", evidence, SILENT);
  assert.equal(silent.gone, true);
  assert.equal(
    silent.observed,
    `"m1" last heard from it 31 s ago (at 2026-12-01T21:39:29.000Z), and it did not answer a probe over the mesh (no answer within 3 s)`,
  );
});

Deno.test("a peer never heard from is judged by the probe alone", () => {
  const evidence = { now: NOW, quietMs: 30_000 };
  assert.equal(notQuiet("m1", evidence), undefined);
  const verdict = goneVerdict("m1", evidence, SILENT);
  assert.equal(verdict.gone, true);
  assert.match(verdict.observed, /^"m1" never heard from it, and it did not answer/);
  assert.equal(goneVerdict("m1", evidence, { answered: true, ms: 2 }).gone, false);
});

Deno.test("the boundary: quiet for exactly the window counts as quiet", () => {
  assert.equal(notQuiet("m1", { now: NOW, lastHeard: NOW - 30_000, quietMs: 30_000 }), undefined);
  assert.notEqual(notQuiet("m1", { now: NOW, lastHeard: NOW - 29_999, quietMs: 30_000 }), undefined);
});
