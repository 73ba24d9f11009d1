import assert from "node:assert/strict";
import { join } from "node:path";
import { dnsTestFlags, freePort, udpFree, udpQuery } from "../../tests/dns_support.ts";
import { ROOT, type TempLayout, tempLayout } from "../../tests/harness.ts";
import type { ContainerSpec } from "../deploy/mod.ts";
import { type DnsSpec, renderDnsSpec, writeDnsSpec } from "../dns/mod.ts";
import { ingressContainerSpec } from "../serving/mod.ts";
import {
  containerDns,
  ingressHttpPortFromEnv,
  localizeIngress,
  type SupervisedDnsRunner,
  supervisedDnsRunner,
} from "./serving_runtime.ts";

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

// Where no systemd runs, the daemon keeps `ployzd dns` as a child: one that dies (here SIGKILL, so it cannot drain
// or say goodbye) is respawned after a bounded backoff and answers real queries again; one that exits because
// its build cannot serve the spec stays down and is reported; a requested stop is never undone.

/** A respawned child must answer again within this bound: a 1 s or 2 s backoff plus a deno start. */
const ANSWER_AGAIN_MS = 10_000;

function spec(port: number): DnsSpec {
  return renderDnsSpec({
    machineId: "m1",
    listen: [`127.0.0.1:${port}`],
    upstreams: [],
    generatedAt: new Date(),
    services: [{ project: "shop", service: "web", replicas: [{ address: "10.210.1.5", machineId: "m1" }] }],
  });
}

function runner(layout: TempLayout, lines: string[]): SupervisedDnsRunner {
  return supervisedDnsRunner({
    argv: [
      Deno.execPath(),
      "run",
      "--quiet",
      "--no-prompt",
      "--unstable-net",
      ...dnsTestFlags(layout),
      join(ROOT, "cmd", "ployzd.ts"),
      "dns",
    ],
    env: { ...layout.env, NO_COLOR: "1" },
    log: (line) => lines.push(line),
  });
}

/** Milliseconds until `web.shop.internal` is answered on `port`; throws after `ms`. */
async function answered(port: number, ms = ANSWER_AGAIN_MS): Promise<number> {
  const start = Date.now();
  while (true) {
    const outcome = await udpQuery(port, "web.shop.internal", 200);
    if ("addresses" in outcome && outcome.addresses.join() === "10.210.1.5") return Date.now() - start;
    if (Date.now() - start > ms) {
      throw new Error(`No answer on ${port} within ${ms} ms: ${JSON.stringify(outcome)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

Deno.test("a ployzd dns child killed with SIGKILL is respawned with a growing delay and answers again", async () => {
  await using layout = await tempLayout();
  const port = await freePort();
  await writeDnsSpec(join(layout.runDir, "dns.json"), spec(port));
  const lines: string[] = [];
  const dns = runner(layout, lines);
  try {
    await dns.ensure();
    await answered(port, 20_000);
    for (const [i, delay] of [1000, 2000].entries()) {
      const pid = dns.pid();
      assert.ok(pid !== undefined, "a child runs");
      Deno.kill(pid, "SIGKILL");
      const took = await answered(port);
      console.log(`dns respawn: answering again ${took} ms after SIGKILL #${i + 1} (backoff ${delay} ms)`);
      assert.ok(took >= delay - 100, `answered after ${took} ms, before the ${delay} ms backoff ended`);
      assert.notEqual(dns.pid(), pid);
      assert.match(
        lines.at(-1) ?? "",
        new RegExp(`exited with signal SIGKILL after \\d+ ms, restarting in ${delay} ms`),
      );
    }
  } finally {
    await dns.close();
  }
  assert.equal(dns.pid(), undefined);
  assert.ok(await udpFree(port), "the stopped child released its port");
  await new Promise((resolve) => setTimeout(resolve, 1500));
  assert.equal(dns.pid(), undefined, "a requested stop is not undone by a respawn");
  assert.ok(await udpFree(port));
});

Deno.test("a ployzd dns child that cannot serve the spec (exit 3) stays down and is reported", async () => {
  await using layout = await tempLayout();
  const port = await freePort();
  const specPath = join(layout.runDir, "dns.json");
  await writeDnsSpec(specPath, spec(port));
  const lines: string[] = [];
  const dns = runner(layout, lines);
  try {
    await dns.ensure();
    await answered(port, 20_000);
    await Deno.writeTextFile(specPath, JSON.stringify({ ...spec(port), format: 2 }));
    await until("the exit-3 report", () => lines.some((l) => /exited with code 3/.test(l)));
    assert.match(lines.at(-1) ?? "", /cannot serve the current DNS spec, not restarting it/);
    await new Promise((resolve) => setTimeout(resolve, 2500));
    assert.equal(dns.pid(), undefined, "not respawned");
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.ok(await udpFree(port), "the port stays handed back");
    // The next ensure (a new binary, a new spec) starts it again.
    await writeDnsSpec(specPath, spec(port));
    await dns.ensure();
    await answered(port, 20_000);
  } finally {
    await dns.close();
  }
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
      await new Promise((resolve) => setTimeout(resolve, 20));
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
