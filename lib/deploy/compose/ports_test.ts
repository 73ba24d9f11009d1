import assert from "node:assert/strict";
import fc from "fast-check";
import { formatExtensionPort, parseExtensionPort, parseShortPort } from "./ports.ts";
import type { NormalizedPort } from "./types.ts";

function parsed(text: string): NormalizedPort {
  const result = parseExtensionPort(text);
  assert.ok(result.ok, result.ok ? "" : result.error);
  return result.value;
}

Deno.test("parseExtensionPort() reads ingress forms with their defaults", () => {
  assert.deepEqual(parsed("80/http"), {
    kind: "ingress",
    hostname: null,
    loadBalancerPort: 80,
    containerPort: 80,
    protocol: "http",
  });
  assert.deepEqual(parsed("app.example.com:3000/https"), {
    kind: "ingress",
    hostname: "app.example.com",
    loadBalancerPort: 443,
    containerPort: 3000,
    protocol: "https",
  });
  assert.deepEqual(parsed("8443:3000/https"), {
    kind: "ingress",
    hostname: null,
    loadBalancerPort: 8443,
    containerPort: 3000,
    protocol: "https",
  });
  assert.equal((parsed("api:3000/http") as { hostname: string }).hostname, "api");
});

Deno.test("parseExtensionPort() reads host forms, IPv4 and IPv6", () => {
  assert.deepEqual(parsed("127.0.0.1:5432:5432@host"), {
    kind: "host",
    hostIp: "127.0.0.1",
    publishedPort: 5432,
    containerPort: 5432,
    protocol: "tcp",
  });
  assert.equal((parsed("[::1]:53:53/udp@host") as { hostIp: string }).hostIp, "::1");
  assert.equal((parsed("::1:53:53/udp@host") as { hostIp: string }).hostIp, "::1");
});

Deno.test("parseExtensionPort() makes an ingress route without a protocol https on 443", () => {
  assert.deepEqual(parseExtensionPort("app.example.com:8080"), {
    ok: true,
    value: {
      kind: "ingress",
      hostname: "app.example.com",
      loadBalancerPort: 443,
      containerPort: 8080,
      protocol: "https",
    },
  });
  const host = parseExtensionPort("9100:9100@host");
  assert.ok(host.ok && host.value.kind === "host" && host.value.protocol === "tcp");
});

Deno.test("parseExtensionPort() refuses what it cannot publish", () => {
  const cases: [string, RegExp][] = [
    ["80/tcp", /TCP\/UDP ingress is not supported/],
    ["80:80/http@host", /unsupported protocol "http"/],
    ["80@host", /published port is required/],
    ["a@b@host", /too many "@"/],
    ["8000-8010/http", /port ranges are not supported/],
    ["0/http", /expected a number from 1 to 65535/],
    ["70000/http", /expected a number from 1 to 65535/],
    ["80/ftp", /unsupported protocol "ftp"/],
    ["300.1.1.1:80:80@host", /invalid host IP "300.1.1.1"/],
  ];
  for (const [text, message] of cases) {
    const result = parseExtensionPort(text);
    assert.equal(result.ok, false, text);
    if (!result.ok) assert.match(result.error, message, text);
  }
});

Deno.test("parseShortPort() reads Compose short syntax", () => {
  assert.deepEqual(parseShortPort("127.0.0.1:8080:80/udp"), {
    ok: true,
    value: [{ hostIp: "127.0.0.1", published: 8080, target: 80, protocol: "udp" }],
  });
  assert.deepEqual(parseShortPort("80"), {
    ok: true,
    value: [{ hostIp: null, published: null, target: 80, protocol: "tcp" }],
  });
  assert.deepEqual(parseShortPort("8000-8001:80-81"), {
    ok: true,
    value: [
      { hostIp: null, published: 8000, target: 80, protocol: "tcp" },
      { hostIp: null, published: 8001, target: 81, protocol: "tcp" },
    ],
  });
});

const portArbitrary = fc.integer({ min: 1, max: 65535 });
const labelArbitrary = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?$/);

const publication: fc.Arbitrary<NormalizedPort> = fc.oneof(
  fc.record({
    kind: fc.constant("ingress" as const),
    hostname: fc.option(
      fc.array(labelArbitrary, { minLength: 1, maxLength: 3 }).map((labels) => labels.join(".")),
    ),
    loadBalancerPort: portArbitrary,
    containerPort: portArbitrary,
    protocol: fc.constantFrom("http" as const, "https" as const),
  }).filter((port) => port.hostname === null || !/^\d+$/.test(port.hostname)),
  fc.record({
    kind: fc.constant("host" as const),
    hostIp: fc.option(fc.oneof(fc.ipV4(), fc.constantFrom("::1", "fd00::1", "10.0.0.0/8"))),
    publishedPort: portArbitrary,
    containerPort: portArbitrary,
    protocol: fc.constantFrom("tcp" as const, "udp" as const),
  }).filter((port) => port.hostIp !== "0.0.0.0"),
);

Deno.test("parseExtensionPort() reads back what formatExtensionPort() writes", () => {
  fc.assert(
    fc.property(publication, (port) => assert.deepEqual(parsed(formatExtensionPort(port)), { ...port })),
  );
});
