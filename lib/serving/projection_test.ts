import assert from "node:assert/strict";
import type { Container } from "../store/mod.ts";
import { acksToWrite } from "./acks.ts";
import { canonical, configDials } from "./caddy_loader.ts";
import { projectCaddy } from "./caddy_projection.ts";
import { dnsUpstreamsFromEnv, lookupId, projectDns } from "./dns_projection.ts";
import { renderRuntimeUnit } from "../installer/mod.ts";
import { ingressRoutes, SERVING_LABELS, servingLabels } from "./labels.ts";

const INGRESS = servingLabels({
  ports: [{
    kind: "ingress",
    hostname: "App.Example.com",
    loadBalancerPort: 80,
    containerPort: 8080,
    protocol: "http",
  }],
  caddy: null,
});

function row(id: string, over: Partial<Container> = {}): Container {
  return {
    id,
    "machine_id": "m1",
    project: "shop",
    service: "web",
    deployment: "A",
    name: id,
    image: "i",
    state: "running",
    health: "healthy",
    addresses: [`10.210.1.${id.length + id.charCodeAt(id.length - 1) % 50}`],
    labels: INGRESS,
    ...over,
  };
}

Deno.test("servingLabels carries ingress ports and x-caddy; ingressRoutes reads them back tolerantly", () => {
  assert.deepEqual(ingressRoutes(row("a")), [
    { hostname: "app.example.com", loadBalancerPort: 80, containerPort: 8080, protocol: "http" },
  ]);
  assert.deepEqual(servingLabels({ ports: [{ kind: "host" }], caddy: null }), {});
  assert.deepEqual(ingressRoutes(row("a", { labels: { [SERVING_LABELS.ingress]: "{not json" } })), []);
});

Deno.test("DNS: a pointer limits a Service to its Deployment; only running, healthy, addressed, unmarked serve", () => {
  const rows = [
    row("a1"),
    row("b1", { deployment: "B", "machine_id": "m2", addresses: ["10.210.2.5"] }),
    row("b2", { deployment: "B", health: "starting", addresses: ["10.210.2.6"] }),
    row("b3", { deployment: "B", state: "exited", addresses: ["10.210.2.7"] }),
    row("b4", { deployment: "B", addresses: [] }),
    row("b5", { deployment: "B", health: "none", addresses: ["10.210.2.9"] }),
    row("b6", { deployment: "B", addresses: ["10.210.2.10"], stopping: true }),
    row("db1", { service: "db", addresses: ["10.210.1.9"] }),
  ];
  const pointers = [{ project: "shop", service: "web", deployment: "B" }];
  const input = projectDns(rows, pointers, { machineId: "m1", listen: ["10.210.1.1:53"], now: new Date(0) });
  assert.deepEqual(
    input.services.map((s) => [s.service, s.replicas.map((r) => r.address)]),
    [["db", ["10.210.1.9"]], ["web", ["10.210.2.9", "10.210.2.5"]]],
  );
  const none = projectDns(rows, [], {
    machineId: "m1",
    listen: [],
    now: new Date(0),
    stopping: new Set(["db1"]),
  });
  assert.deepEqual(none.services.map((s) => s.service), ["web"]);
  assert.equal(none.services[0].replicas.length, 3);
});

Deno.test("DNS: a replica is looked up by an id that fits one DNS label; upstreams come from the environment", () => {
  const full = "ca015b5f41fe83d10f27fd8698214cb74303a77c66c2d64455e961423b034019";
  const input = projectDns([row(full, { addresses: ["10.210.2.4"] })], [], {
    machineId: "m1",
    listen: [],
    now: new Date(0),
  });
  assert.equal(input.services[0].replicas[0].containerId, "ca015b5f41fe");
  assert.equal(lookupId("c3"), "c3");
  assert.equal(dnsUpstreamsFromEnv(() => undefined), undefined);
  assert.equal(dnsUpstreamsFromEnv(() => " , "), undefined);
  assert.deepEqual(dnsUpstreamsFromEnv(() => "192.0.2.1, 10.0.0.2:5353"), ["192.0.2.1", "10.0.0.2:5353"]);
});

Deno.test("Caddy: one site per hostname to the pointed containers of every Machine; marked ones excluded; fallback", () => {
  const rows = [
    row("a1", { addresses: ["10.210.1.2"] }),
    row("b1", { deployment: "B", addresses: ["10.210.2.2"], "machine_id": "m2" }),
    row("b2", { deployment: "B", addresses: ["10.210.1.3"] }),
  ];
  const pointers = [{ project: "shop", service: "web", deployment: "B" }];
  const p = projectCaddy(rows, pointers, { machineId: "m1" });
  assert.match(
    p.base,
    /http:\/\/app\.example\.com \{\n\treverse_proxy 10\.210\.1\.3:8080 10\.210\.2\.2:8080 \{/,
  );
  assert.deepEqual(p.upstreams, ["10.210.1.3:8080", "10.210.2.2:8080"]);
  assert.deepEqual(p.pointers, { "shop/web": "B" });
  const marked = projectCaddy(rows, pointers, { machineId: "m1", stopping: new Set(["b2"]) });
  assert.deepEqual(marked.upstreams, ["10.210.2.2:8080"]);
  // A pointer whose Deployment has nothing servable (its rows not here yet, or a stop-first redeploy took its last
  // old container out): the Service's other servable containers serve rather than none.
  const fallback = projectCaddy(rows, [{ project: "shop", service: "web", deployment: "C" }], {
    machineId: "m1",
  });
  assert.deepEqual(fallback.upstreams, ["10.210.1.2:8080", "10.210.1.3:8080", "10.210.2.2:8080"]);
  const empty = projectCaddy(rows, pointers, { machineId: "m1", stopping: new Set(["a1", "b1", "b2"]) });
  assert.match(empty.base, /http:\/\/app\.example\.com \{\n\trespond "Bad Gateway" 502/);
  assert.equal(projectCaddy(rows, pointers, { machineId: "m1" }).base, p.base, "deterministic");
});

Deno.test("Caddy: conflicting hostnames, missing hostnames and https are reported, not projected", () => {
  const other = servingLabels({
    ports: [
      {
        kind: "ingress",
        hostname: "app.example.com",
        loadBalancerPort: 80,
        containerPort: 80,
        protocol: "http",
      },
      { kind: "ingress", hostname: null, loadBalancerPort: 80, containerPort: 80, protocol: "http" },
      {
        kind: "ingress",
        hostname: "s.example.com",
        loadBalancerPort: 443,
        containerPort: 80,
        protocol: "https",
      },
    ],
    caddy: null,
  });
  const p = projectCaddy([row("a1"), row("x1", { service: "zz", labels: other })], [], { machineId: "m1" });
  assert.deepEqual(p.problems.map((x) => x.service), ["shop/zz", "shop/zz", "shop/zz"]);
  assert.match(p.problems[0].message, /already routed to Service "shop\/web"/);
});

Deno.test("x-caddy templates: upstreams helpers render, unknown helpers and Services are problems", () => {
  const frag = (text: string): Record<string, string> => ({ [SERVING_LABELS.caddy]: text });
  const rows = [
    row("api1", {
      service: "api",
      addresses: ["10.210.1.7"],
      labels: frag("h {\n\treverse_proxy {{upstreams 9000}}\n}"),
    }),
    row("w1", {
      service: "w",
      addresses: ["10.210.1.8"],
      labels: frag("# {{.Name}} {{upstreams api 81}} {{upstreams}}"),
    }),
    row("bad1", { service: "bad", labels: frag("{{nope}}") }),
    row("bad2", { service: "bad2", labels: frag("{{upstreams ghost}}") }),
  ];
  const p = projectCaddy(rows, [], { machineId: "m1" });
  assert.deepEqual(p.fragments.map((f) => [f.service, f.text]), [
    ["shop/api", "h {\n\treverse_proxy 10.210.1.7:9000\n}"],
    ["shop/w", "# shop/w 10.210.1.7:81 10.210.1.8"],
  ]);
  assert.deepEqual(p.problems.map((x) => x.service), ["shop/bad", "shop/bad2"]);
});

Deno.test("configDials and canonical read Caddy JSON", () => {
  const config = {
    apps: {
      http: { servers: { s: { routes: [{ handle: [{ upstreams: [{ dial: "b:1" }, { dial: "a:1" }] }] }] } } },
    },
  };
  assert.deepEqual(configDials(config), ["a:1", "b:1"]);
  assert.equal(canonical({ b: 1, a: { d: 1, c: 2 } }), canonical({ a: { c: 2, d: 1 }, b: 1 }));
});

Deno.test("acks are written once per pointer move", () => {
  const pointers = [{ project: "p", service: "s", deployment: "B", version: 2 }];
  const now = new Date(0);
  assert.deepEqual(acksToWrite("m1", pointers, [], now), [
    { "machine_id": "m1", pointer: "p/s", deployment: "B", version: 2, "acked_at": now.toISOString() },
  ]);
  const held = [{ "machine_id": "m1", pointer: "p/s", deployment: "B", version: 2 }];
  assert.deepEqual(acksToWrite("m1", pointers, held, now), []);
  assert.equal(acksToWrite("m1", pointers, [{ ...held[0], version: 1 }], now).length, 1);
});

Deno.test("the DNS runtime unit is the installer's dns unit without an [Install] section", () => {
  const unit = renderRuntimeUnit("dns", { deno: "/usr/lib/ployz/deno", appDir: "/usr/lib/ployz/current" });
  assert.equal(unit.name, "ployz-dns.service");
  assert.ok(!unit.text.includes("[Install]"));
  assert.match(unit.text, /ExecStart=.*cmd\/ployzd\.ts dns/);
  assert.match(unit.text, /runtime unit/);
});
