import { deepEqual, equal, ok } from "node:assert/strict";
import { join } from "node:path";
import { renderDnsSpec } from "./render.ts";
import { parseHostPort, readDnsSpec } from "./spec.ts";
import { writeDnsSpec } from "./write.ts";
import { sampleSpec } from "./test_helpers.ts";
import { tempDir } from "../util/testing/mod.ts";

Deno.test("readDnsSpec() keeps unknown fields and skips entries it cannot use instead of refusing", () => {
  const text = JSON.stringify({
    ...sampleSpec(),
    added_later: { anything: true },
    services: [
      {
        project: "shop",
        service: "web",
        replicas: [{ address: "fd00::5", machine_id: "m1" }, {
          address: "10.210.1.5",
          machine_id: "m1",
          weight: 3,
        }],
      },
      { service: "no-project", replicas: [] },
      { project: "shop", service: "db", replicas: [], tier: "gold" },
    ],
  });
  const reading = readDnsSpec(text);
  if (reading.kind !== "ok") throw new Error(reading.reason);
  deepEqual(reading.spec.added_later, { anything: true });
  equal(reading.spec.services.length, 2);
  deepEqual(reading.spec.services[0].replicas, [{ address: "10.210.1.5", machine_id: "m1", weight: 3 }]);
  equal(reading.spec.services[1].tier, "gold");
  equal(reading.skipped.length, 2);
  ok(reading.skipped[0].includes("not IPv4"));
});

Deno.test("readDnsSpec() refuses only another format as unsupported", () => {
  const reading = readDnsSpec(JSON.stringify({ ...sampleSpec(), format: 2 }));
  equal(reading.kind, "unsupported");
});

Deno.test("readDnsSpec() calls broken JSON, a missing listen or a bad address invalid", () => {
  for (
    const text of [
      "{",
      JSON.stringify({ listen: [] }),
      JSON.stringify({ format: 1 }),
      JSON.stringify({ ...sampleSpec(), listen: ["web:53"] }),
      JSON.stringify({ ...sampleSpec(), listen: ["10.0.0.1"] }),
      JSON.stringify({ ...sampleSpec(), listen: ["10.0.0.1:70000"] }),
      JSON.stringify({ ...sampleSpec(), upstreams: ["dns.google"] }),
    ]
  ) {
    equal(readDnsSpec(text).kind, "invalid", text);
  }
});

Deno.test("parseHostPort() reads IPv4, bracketed IPv6 and default ports, and refuses host names", () => {
  deepEqual(parseHostPort("10.210.1.1:53", undefined), { hostname: "10.210.1.1", port: 53 });
  deepEqual(parseHostPort("[fd00::1]:5353", undefined), { hostname: "fd00::1", port: 5353 });
  deepEqual(parseHostPort("1.1.1.1", 53), { hostname: "1.1.1.1", port: 53 });
  deepEqual(parseHostPort("::1", 53), { hostname: "::1", port: 53 });
  equal(parseHostPort("1.1.1.1", undefined), undefined);
  equal(parseHostPort("localhost:53", undefined), undefined);
  equal(parseHostPort("1.1.1.1:0", undefined), undefined);
});

Deno.test("renderDnsSpec() is deterministic and reads back as the same spec", () => {
  const input = {
    machineId: "m1",
    listen: ["10.210.1.1:53"],
    generatedAt: new Date("2026-01-01T00:00:00Z"),
    services: [
      {
        project: "Shop",
        service: "web",
        replicas: [{ address: "10.210.2.5", machineId: "m2" }, {
          address: "10.210.1.5",
          machineId: "m1",
          containerId: "C1",
        }],
      },
      { project: "blog", service: "api", serviceId: "ABC", replicas: [] },
    ],
  };
  const spec = renderDnsSpec(input);
  deepEqual(renderDnsSpec({ ...input, services: [...input.services].reverse() }), spec);
  equal(spec.services[0].project, "blog");
  deepEqual(spec.services[1].replicas.map((r) => r.address), ["10.210.1.5", "10.210.2.5"]);
  equal(spec.services[1].replicas[0].container_id, "c1");
  equal("upstreams" in spec, false);
  const reading = readDnsSpec(JSON.stringify(spec));
  if (reading.kind !== "ok") throw new Error(reading.reason);
  deepEqual(reading.spec, spec);
});

Deno.test("writeDnsSpec() replaces the file whole and leaves no temp file behind", async () => {
  await using tmp = await tempDir("ployz-dns-");
  const dir = tmp.path;
  const path = join(dir, "dns.json");
  await writeDnsSpec(path, sampleSpec());
  const second = { ...sampleSpec(), "machine_id": "m2" };
  await writeDnsSpec(path, second);
  const reading = readDnsSpec(await Deno.readTextFile(path));
  if (reading.kind !== "ok") throw new Error(reading.reason);
  equal(reading.spec.machine_id, "m2");
  deepEqual(await Array.fromAsync(Deno.readDir(dir), (e) => e.name), ["dns.json"]);
});

Deno.test("readDnsSpec() names the field of the wrong type: invalid at the top, skipped below", () => {
  for (
    const [patch, reason] of [
      [{ listen: "10.0.0.1:53" }, '"listen": expected a string array'],
      [{ listen: [53] }, '"listen": expected a string array'],
      [{ upstreams: [1] }, '"upstreams": expected a string array'],
      [{ machine_id: 7 }, '"machine_id": expected a string'],
      [{ services: {} }, '"services": expected an array'],
    ] as const
  ) {
    deepEqual(readDnsSpec(JSON.stringify({ ...sampleSpec(), ...patch })), { kind: "invalid", reason });
  }
  const reading = readDnsSpec(JSON.stringify({
    ...sampleSpec(),
    services: [
      "web",
      { project: "p", service: "", replicas: [] },
      { project: "p", service: "s", service_id: 1, replicas: [] },
      {
        project: "p",
        service: "t",
        replicas: [7, { address: "10.0.0.9", container_id: 5 }, { address: "10.0.0.8" }],
      },
    ],
  }));
  if (reading.kind !== "ok") throw new Error(reading.reason);
  deepEqual(reading.skipped, [
    "services[0]: expected an object",
    'services[1]: "service": expected a non-empty string',
    'services[2]: "service_id": expected a string',
    "services[3].replicas[0]: expected an object",
    'services[3].replicas[1]: "container_id": expected a string',
  ]);
  deepEqual(reading.spec.services.map((s) => [s.service, s.replicas]), [["t", [{
    machine_id: "",
    address: "10.0.0.8",
  }]]]);
});
