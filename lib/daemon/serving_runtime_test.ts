import assert from "node:assert/strict";
import type { ContainerSpec } from "../deploy/mod.ts";
import { ingressContainerSpec } from "../serving/mod.ts";
import { containerDns, ingressHttpPortFromEnv, localizeIngress } from "./serving_runtime.ts";

Deno.test("an Ingress Proxy spec gets this Machine's admin directory, HTTP port and network; others are unchanged", () => {
  const spec = ingressContainerSpec({ machineId: "m1", deployment: "d1" });
  const machine = { runDir: "/tmp/run", httpPort: 8081, network: "ployz-test" };
  const local = localizeIngress(spec, machine);
  assert.deepEqual(local.mounts?.map((m) => m.source), ["/tmp/run/caddy"]);
  assert.deepEqual(local.ports?.map((p) => p.hostPort), [8081]);
  assert.equal(local.network?.name, "ployz-test");
  const web: ContainerSpec = { ...spec, project: "shop", service: "web" };
  assert.equal(localizeIngress(web, machine), web);
});

Deno.test("containers resolve through the Machine Gateway and search their own Project", () => {
  assert.deepEqual(containerDns("10.210.3.1", "shop"), {
    servers: ["10.210.3.1"],
    search: ["shop.internal"],
    options: ["ndots:1"],
  });
});

Deno.test("PLOYZ_INGRESS_HTTP_PORT overrides port 80 only with a valid port", () => {
  assert.equal(ingressHttpPortFromEnv(() => undefined), 80);
  assert.equal(ingressHttpPortFromEnv(() => "8080"), 8080);
  assert.equal(ingressHttpPortFromEnv(() => "nope"), 80);
});
