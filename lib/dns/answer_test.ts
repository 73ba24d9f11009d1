import { deepEqual, equal, ok } from "node:assert/strict";
import { decide, UDP_MAX } from "./answer.ts";
import { buildZone } from "./zone.ts";
import { addressesOf, decode, query, sampleSpec } from "./test_helpers.ts";
import type { DnsSpec } from "./spec.ts";

function reply(
  message: Uint8Array,
  spec: DnsSpec = sampleSpec(),
  maxSize = UDP_MAX,
): ReturnType<typeof decode> {
  const decision = decide(buildZone(spec), message, maxSize);
  if (decision.kind !== "reply") throw new Error(`expected a reply, got ${decision.kind}`);
  return decode(decision.message);
}

Deno.test("decide() answers svc.project.internal with every replica as TTL-0 A records", () => {
  const packet = reply(query("web.shop.internal"));
  equal(packet.id, 4242);
  equal(packet.rcode, "NOERROR");
  ok(packet.flag_aa && packet.flag_rd && packet.flag_ra);
  deepEqual(addressesOf(packet).sort(), ["10.210.1.5", "10.210.2.5", "10.210.3.5"]);
  for (const answer of packet.answers ?? []) {
    equal((answer as { ttl?: number }).ttl, 0);
    equal(answer.type, "A");
    equal(answer.name, "web.shop.internal");
  }
  deepEqual(packet.questions, [{ name: "web.shop.internal", type: "A", class: "IN" }]);
});

Deno.test("decide() matches names case-insensitively and echoes the question as asked", () => {
  const packet = reply(query("WeB.SHOP.Internal"));
  equal(packet.rcode, "NOERROR");
  equal(addressesOf(packet).length, 3);
  equal(packet.questions?.[0].name, "WeB.SHOP.Internal");
});

Deno.test("decide() rotates the replicas from one query to the next", () => {
  const zone = buildZone(sampleSpec());
  const firsts = new Set<string>();
  for (let i = 0; i < 3; i++) {
    const d = decide(zone, query("web.shop.internal"), UDP_MAX);
    if (d.kind !== "reply") throw new Error("expected a reply");
    firsts.add(addressesOf(decode(d.message))[0]);
  }
  equal(firsts.size, 3);
});

Deno.test("decide() puts this Machine's replicas first for svc.project.nearest.internal", () => {
  const zone = buildZone(sampleSpec());
  for (let i = 0; i < 3; i++) {
    const d = decide(zone, query("web.shop.nearest.internal"), UDP_MAX);
    if (d.kind !== "reply") throw new Error("expected a reply");
    const addresses = addressesOf(decode(d.message));
    equal(addresses[0], "10.210.1.5");
    equal(addresses.length, 3);
  }
});

Deno.test("decide() answers <id>.id.lookup.internal by Service id and by container id", () => {
  deepEqual(addressesOf(reply(query("5E71CE1D.id.lookup.internal"))).sort(), [
    "10.210.1.5",
    "10.210.2.5",
    "10.210.3.5",
  ]);
  deepEqual(addressesOf(reply(query("c3.id.lookup.internal"))), ["10.210.3.5"]);
  equal(reply(query("ffff.id.lookup.internal")).rcode, "NXDOMAIN");
});

Deno.test("decide() answers svc.project.<machine>.machine.internal with that Machine's replicas only", () => {
  deepEqual(addressesOf(reply(query("web.shop.m2.machine.internal"))), ["10.210.2.5"]);
  equal(reply(query("web.shop.m9.machine.internal")).rcode, "NXDOMAIN");
});

Deno.test("decide() gives NXDOMAIN for unknown .internal names, regions and the bare zone", () => {
  for (
    const name of [
      "nope.shop.internal",
      "web.other.internal",
      "web.shop.eu.region.internal",
      "internal",
      "a.b.c.d.e.internal",
      "web.internal",
    ]
  ) {
    const packet = reply(query(name));
    equal(packet.rcode, "NXDOMAIN", name);
    equal(packet.answers?.length, 0, name);
    ok(packet.flag_aa, name);
  }
});

Deno.test("decide() gives an empty NOERROR for AAAA and other types under .internal", () => {
  for (const type of ["AAAA", "TXT", "MX", "SRV"] as const) {
    for (const name of ["web.shop.internal", "nope.shop.internal"]) {
      const packet = reply(query(name, type));
      equal(packet.rcode, "NOERROR", `${type} ${name}`);
      equal(packet.answers?.length, 0);
    }
  }
});

Deno.test("decide() forwards names outside .internal, including look-alikes", () => {
  const zone = buildZone(sampleSpec());
  for (
    const name of ["example.com", "internal.example", "web.shop.internal.com", "WEB.SHOP.INTERNAL.example"]
  ) {
    equal(decide(zone, query(name), UDP_MAX).kind, "forward", name);
  }
});

Deno.test("decide() drops responses and runts, answers FORMERR and NOTIMP without authority", () => {
  const zone = buildZone(sampleSpec());
  equal(decide(zone, new Uint8Array(5), UDP_MAX).kind, "drop");
  const response = query("web.shop.internal");
  response[2] |= 0x80;
  equal(decide(zone, response, UDP_MAX).kind, "drop");
  const noQuestion = query("web.shop.internal").slice(0, 12);
  noQuestion[5] = 0;
  const formErr = reply(noQuestion);
  equal(formErr.rcode, "FORMERR");
  equal(formErr.flag_aa, false);
  const notify = query("web.shop.internal");
  notify[2] |= 4 << 3;
  equal(reply(notify).rcode, "NOTIMP");
});

Deno.test("decide() truncates an answer that does not fit and sets TC", () => {
  const spec = sampleSpec();
  spec.services[0].replicas = Array.from({ length: 100 }, (_, i) => ({
    address: `10.210.${i >> 8}.${i & 255}`,
    machine_id: "m1",
  }));
  const udp = reply(query("web.shop.internal"), spec);
  ok(udp.flag_tc);
  ok((udp.answers?.length ?? 0) > 20);
  ok((udp.answers?.length ?? 0) < 100);
  const tcp = reply(query("web.shop.internal"), spec, 65535);
  equal(tcp.flag_tc, false);
  equal(tcp.answers?.length, 100);
});
