import assert from "node:assert/strict";
import type { ContainerSpec } from "../deploy/mod.ts";
import { ingressContainerSpec, kernelMigratesRequests, MIGRATE_REQ_SYSCTL } from "../serving/mod.ts";
import {
  containerDns,
  ingressHttpPortFromEnv,
  ingressHttpsPortFromEnv,
  localizeIngress,
  supervisedDnsRunner,
} from "./serving_runtime.ts";
import { sleep } from "../util/mod.ts";

Deno.test("an Ingress Proxy spec gets this Machine's admin directory, HTTP port and network; others are unchanged", () => {
  const spec = ingressContainerSpec({ machineId: "m1", deployment: "d1" });
  const machine = { runDir: "/tmp/run", httpPort: 8081, network: "ployz-test" };
  const local = localizeIngress(spec, machine);
  assert.deepEqual(local.mounts?.map((m) => m.source), ["/tmp/run/caddy"]);
  assert.deepEqual(local.ports?.map((p) => p.hostPort), [8081, 443]);
  assert.equal(local.network?.name, "ployz-test");
  const moved = localizeIngress(spec, { ...machine, httpsPort: 8443 });
  assert.deepEqual(moved.ports?.map((p) => p.hostPort), [8081, 8443]);
  const off = localizeIngress(spec, { ...machine, httpsPort: null });
  assert.deepEqual(off.ports?.map((p) => p.hostPort), [8081]);
  const web: ContainerSpec = { ...spec, project: "shop", service: "web" };
  assert.equal(localizeIngress(web, machine), web);
});

Deno.test("an Ingress Proxy migrates a closing listener's queued connections where the kernel can", () => {
  // A Caddy config load closes the old SO_REUSEPORT listener; without migration its queued connections are reset.
  const spec = ingressContainerSpec({ machineId: "m1", deployment: "d1" });
  const machine = { runDir: "/tmp/run", httpPort: 80, network: "ployz" };
  assert.deepEqual(localizeIngress(spec, { ...machine, migrateRequests: true }).sysctls, {
    [MIGRATE_REQ_SYSCTL]: "1",
  });
  assert.equal(localizeIngress(spec, { ...machine, migrateRequests: false }).sysctls, undefined);
  const web: ContainerSpec = { ...spec, project: "shop", service: "web" };
  assert.equal(localizeIngress(web, { ...machine, migrateRequests: true }), web);
  assert.deepEqual(
    ["6.18.44-fc-v1045", "5.15.0-91-generic", "5.14.0", "5.10.0-28-amd64", "4.18.0-513.el8.x86_64", ""].map((
      r,
    ) => kernelMigratesRequests(r)),
    [true, true, true, false, false, false],
  );
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

Deno.test("PLOYZ_INGRESS_HTTPS_PORT moves or turns off port 443", () => {
  assert.equal(ingressHttpsPortFromEnv(() => undefined), 443);
  assert.equal(ingressHttpsPortFromEnv(() => "8443"), 8443);
  assert.equal(ingressHttpsPortFromEnv(() => "off"), null);
  assert.equal(ingressHttpsPortFromEnv(() => "nope"), 443);
});

/** The first `count` log lines of a runner of `argv` (50 ms first delay, 200 ms bound), waiting at most `waitMs`. */
async function exitsOf(
  argv: string[],
  count: number,
  options: { stableMs?: number; waitMs?: number } = {},
): Promise<string[]> {
  const lines: string[] = [];
  const dns = supervisedDnsRunner({
    argv,
    backoffMs: 50,
    maxBackoffMs: 200,
    stableMs: options.stableMs ?? 10_000,
    log: (l) => lines.push(l),
  });
  try {
    await dns.ensure();
    const deadline = Date.now() + (options.waitMs ?? 10_000);
    while (lines.length < count && Date.now() < deadline) {
      await sleep(20);
    }
  } finally {
    await dns.close();
  }
  return lines.slice(0, count);
}

Deno.test("the respawn delay doubles up to its bound and starts over after a child stayed up", async () => {
  const quick = await exitsOf(["sh", "-c", "exit 1"], 5);
  assert.deepEqual(
    quick.map((l) => l.match(/exited with code 1 after \d+ ms, restarting in (\d+) ms/)?.[1]),
    [
      "50",
      "100",
      "200",
      "200",
      "200",
    ],
  );
  const steady = await exitsOf(["sh", "-c", "sleep 0.3; exit 7"], 3, { stableMs: 200 });
  assert.deepEqual(
    steady.map((l) => l.match(/exited with code 7 after \d+ ms, restarting in (\d+) ms/)?.[1]),
    [
      "50",
      "50",
      "50",
    ],
  );
});

Deno.test("a child that exits with the cannot-serve code is reported once and not respawned", async () => {
  // Long enough for several 50 ms respawns, were there any.
  const lines = await exitsOf(["sh", "-c", "exit 3"], 2, { waitMs: 1000 });
  assert.equal(lines.length, 1, lines.join("\n"));
  assert.match(lines[0], /exited with code 3 after \d+ ms: this build cannot serve the current DNS spec/);
});
