import { deepEqual, equal, notEqual, ok } from "node:assert/strict";
import fc from "fast-check";
import { decide, UDP_MAX } from "./answer.ts";
import { createAnswerCache } from "./answer_cache.ts";
import type { DnsSpec } from "./spec.ts";
import { addressesOf, decode, query, sampleSpec } from "./test_helpers.ts";
import { buildZone } from "./zone.ts";

function replied(decision: ReturnType<typeof decide>): Uint8Array {
  if (decision.kind !== "reply") throw new Error(`expected a reply, got ${decision.kind}`);
  return decision.message;
}

Deno.test("a cached answer echoes each query's id and question and rotates the replicas as the zone does", () => {
  const cache = createAnswerCache(buildZone(sampleSpec()), UDP_MAX);
  equal(cache.lookup(query("web.shop.internal", "A", 1)), undefined, "nothing before the first answer");
  const first = decode(replied(cache.decide(query("web.shop.internal", "A", 1))));
  equal(first.id, 1);
  const firsts = [addressesOf(first)[0]];
  for (let id = 2; id <= 4; id++) {
    const hit = cache.lookup(query("web.shop.internal", "A", id));
    ok(hit, `query ${id} is answered from the cache`);
    const packet = decode(hit);
    equal(packet.id, id);
    ok(packet.flag_aa && packet.flag_rd);
    deepEqual(addressesOf(packet).sort(), ["10.210.1.5", "10.210.2.5", "10.210.3.5"]);
    firsts.push(addressesOf(packet)[0]);
  }
  equal(new Set(firsts.slice(0, 3)).size, 3, "three queries see three first addresses");
  equal(firsts[3], firsts[0], "the fourth starts the rotation over");
});

Deno.test("the cache keeps the question's case and the RD bit apart, and NXDOMAIN and NOERROR answers too", () => {
  const cache = createAnswerCache(buildZone(sampleSpec()), UDP_MAX);
  cache.decide(query("web.shop.internal"));
  equal(cache.lookup(query("WEB.shop.internal")), undefined, "another case is another question");
  const noRecursion = query("web.shop.internal");
  noRecursion[2] &= ~1;
  equal(cache.lookup(noRecursion), undefined, "RD is echoed, so it is part of the key");
  const mixed = decode(replied(cache.decide(query("WEB.shop.internal", "A", 9))));
  equal(mixed.questions?.[0].name, "WEB.shop.internal");
  equal(decode(cache.lookup(query("WEB.shop.internal", "A", 10))!).questions?.[0].name, "WEB.shop.internal");

  cache.decide(query("nope.shop.internal"));
  equal(decode(cache.lookup(query("nope.shop.internal"))!).rcode, "NXDOMAIN");
  cache.decide(query("web.shop.internal", "AAAA"));
  const aaaa = decode(cache.lookup(query("web.shop.internal", "AAAA"))!);
  equal(aaaa.rcode, "NOERROR");
  equal(aaaa.answers?.length, 0);
});

Deno.test("forwarded names, other opcodes and unreadable queries are never cached", () => {
  const cache = createAnswerCache(buildZone(sampleSpec()), UDP_MAX);
  equal(cache.decide(query("example.com")).kind, "forward");
  equal(cache.lookup(query("example.com")), undefined);
  const notify = query("web.shop.internal");
  notify[2] |= 4 << 3;
  equal(decode(replied(cache.decide(notify))).rcode, "NOTIMP");
  equal(cache.lookup(notify), undefined);
  cache.decide(query("web.shop.internal"));
  const cut = query("web.shop.internal").subarray(0, 20);
  equal(cache.lookup(cut), undefined, "a question cut short is not looked up");
  equal(decode(replied(cache.decide(cut))).rcode, "FORMERR");
  equal(cache.lookup(query("web.shop.internal").subarray(0, 31)), undefined, "type and class must be there");
});

Deno.test("a cached answer cut to the size limit keeps TC set", () => {
  const spec = sampleSpec();
  spec.services[0].replicas = Array.from(
    { length: 12 },
    (_, i) => ({ address: `10.210.9.${i}`, machine_id: "m1" }),
  );
  const big = buildZone(spec);
  const cache = createAnswerCache(big, 100);
  const first = decode(replied(cache.decide(query("web.shop.internal"))));
  ok(first.flag_tc);
  const hit = decode(cache.lookup(query("web.shop.internal"))!);
  ok(hit.flag_tc);
  equal(hit.answers?.length, first.answers?.length);
  notEqual(addressesOf(hit)[0], addressesOf(first)[0]);
});

// One replica per name, so rotation cannot tell two answers apart: whatever the cache answers must be byte for
// byte what decide() answers, for any message, including every mutation of a real query.
Deno.test("a cache hit is always exactly what decide() answers", () => {
  const spec: DnsSpec = {
    ...sampleSpec(),
    services: [{ project: "shop", service: "web", replicas: [{ address: "10.210.1.5", machine_id: "m1" }] }],
  };
  const zone = buildZone(spec);
  const names = ["web.shop.internal", "WEB.SHOP.internal", "nope.shop.internal", "web.shop.nearest.internal"];
  const message = fc.oneof(
    fc.uint8Array({ maxLength: 64 }),
    fc.tuple(
      fc.constantFrom(...names),
      fc.constantFrom<"A" | "AAAA" | "TXT">("A", "AAAA", "TXT"),
      fc.array(fc.tuple(fc.nat(40), fc.nat(255)), { maxLength: 3 }),
      fc.nat(45),
    ).map(([name, type, edits, cut]) => {
      const m = query(name, type);
      for (const [at, value] of edits) if (at < m.length) m[at] = value;
      return cut > 0 && cut < m.length ? m.subarray(0, cut) : m;
    }),
  );
  fc.assert(fc.property(fc.array(message, { minLength: 1, maxLength: 8 }), (messages) => {
    const cache = createAnswerCache(zone, UDP_MAX);
    for (const name of names) cache.decide(query(name));
    for (const m of messages) {
      const hit = cache.lookup(m);
      const expected = decide(zone, m, UDP_MAX);
      if (hit) deepEqual(hit, replied(expected));
      const decided = cache.decide(m);
      deepEqual(decided, expected);
    }
  }));
});
