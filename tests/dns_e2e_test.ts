// `ployzd dns` as a real process under the dns permission set: silent before its first load, serving, reloading,
// forwarding, probing, and handing the port back when the spec is newer than the binary.
import { deepEqual, equal, match, notEqual, ok } from "node:assert/strict";
import { join } from "node:path";
import { writeDnsSpec } from "../lib/dns/mod.ts";
import { configFlags } from "../lib/permissions/mod.ts";
import {
  dnsTestFlags,
  fakeUpstream,
  freeDnsPort,
  type QueryOutcome,
  startDns,
  tcpFree,
  tcpQuery,
  udpFree,
  udpQuery,
  webShopSpec,
} from "./support/dns.ts";
import { ROOT, run, tempLayout } from "./support/spawn.ts";
import { eventually } from "./support/poll.ts";

function addresses(outcome: QueryOutcome): string[] {
  if ("error" in outcome) throw new Error(`Query failed: ${outcome.error}`);
  return [...outcome.addresses].sort();
}

Deno.test("ployzd dns answers nothing before its first load, then serves and reloads its spec", async () => {
  await using layout = await tempLayout();
  const specPath = join(layout.runDir, "dns.json");
  await Deno.remove(specPath);
  const port = await freeDnsPort();
  await using dns = startDns(layout, dnsTestFlags(layout));
  await dns.waitFor(/Waiting for the spec/);
  deepEqual(await udpQuery(port, "web.shop.internal", 500), { error: "timeout" });
  ok(await udpFree(port), "no UDP socket is bound before the first load");
  ok(await tcpFree(port), "no TCP socket is bound before the first load");

  await Deno.writeTextFile(specPath, "{");
  await dns.waitFor(/answering nothing until one loads/);
  deepEqual(await udpQuery(port, "web.shop.internal", 500), { error: "timeout" });

  await writeDnsSpec(specPath, webShopSpec(port, ["10.210.1.5", "10.210.2.5"]));
  await dns.waitFor(/Serving spec format 1/);
  deepEqual(addresses(await udpQuery(port, "web.shop.internal")), ["10.210.1.5", "10.210.2.5"]);
  deepEqual(addresses(await tcpQuery(port, "WEB.SHOP.INTERNAL")), ["10.210.1.5", "10.210.2.5"]);
  deepEqual(addresses(await udpQuery(port, "web.shop.m2.machine.internal")), ["10.210.2.5"]);
  equal((await udpQuery(port, "nope.shop.internal") as { rcode: string }).rcode, "NXDOMAIN");

  await writeDnsSpec(specPath, webShopSpec(port, ["10.210.3.7"]));
  await eventually(10_000, "the reloaded spec", async () => {
    const outcome = await udpQuery(port, "web.shop.internal");
    return "addresses" in outcome && outcome.addresses.join() === "10.210.3.7" || undefined;
  }, 100);

  await Deno.writeTextFile(specPath, '{"format": 1, "listen": "not a list"}');
  await dns.waitFor(/keeping the last good one/);
  deepEqual(addresses(await udpQuery(port, "web.shop.internal")), ["10.210.3.7"]);

  dns.child.kill("SIGTERM");
  equal(await dns.exited(), 0);
  await dns.waitFor(/Stopped: sockets drained and closed/);
});

Deno.test("ployzd dns forwards names outside .internal to its upstream and never to itself", async () => {
  await using layout = await tempLayout();
  await using upstream = await fakeUpstream("192.0.2.44");
  const port = await freeDnsPort();
  await writeDnsSpec(
    join(layout.runDir, "dns.json"),
    webShopSpec(port, ["10.210.1.5"], [`127.0.0.1:${port}`, `127.0.0.1:${upstream.port}`]),
  );
  await using dns = startDns(layout, dnsTestFlags(layout));
  await dns.waitFor(/Serving spec format 1.*1 upstreams/);
  await dns.waitFor(/is this DNS server itself/);
  deepEqual(addresses(await udpQuery(port, "example.com", 5000)), ["192.0.2.44"]);
  deepEqual(upstream.queries, ["example.com"]);
  equal((await udpQuery(port, "nope.shop.internal") as { rcode: string }).rcode, "NXDOMAIN");
  deepEqual(upstream.queries, ["example.com"], ".internal names are never forwarded");
});

Deno.test("ployzd dns --probe exits 0 only when this binary can serve the current spec", async () => {
  await using layout = await tempLayout();
  const specPath = join(layout.runDir, "dns.json");
  const flags = dnsTestFlags(layout);
  // As the unit's ExecStartPre runs it: without deno.json, naming --unstable-net itself.
  const probe = (extra: string[] = configFlags("dns")) =>
    run(Deno.execPath(), [
      "run",
      "--quiet",
      "--no-prompt",
      ...extra,
      ...flags,
      join(ROOT, "cmd", "ployzd.ts"),
      "dns",
      "--probe",
    ], layout.env);

  await Deno.remove(specPath);
  const missing = await probe();
  notEqual(missing.code, 0);
  match(missing.stderr, /^error\[unavailable\]: Cannot read the spec/);

  await writeDnsSpec(specPath, webShopSpec(5353, ["10.210.1.5"]));
  const good = await probe();
  equal(good.code, 0, good.stderr);
  match(good.stdout, /^Can serve the spec .*format 1, 1 services, 1 listen addresses\n$/);

  // deno.json enables the net APIs (`"unstable": ["net"]`), so even a launch without --unstable-net can serve.
  const fromConfig = await probe([]);
  equal(fromConfig.code, 0, fromConfig.stderr);

  await Deno.writeTextFile(specPath, JSON.stringify({ ...webShopSpec(5353, []), format: 2 }));
  const newer = await probe();
  notEqual(newer.code, 0);
  match(newer.stderr, /^error\[unsupported\]: Cannot serve the spec .*format 2 is not known/);
  equal(newer.stderr.trim().split("\n").length, 1, newer.stderr);

  await Deno.writeTextFile(specPath, JSON.stringify({ ...webShopSpec(5353, []), listen: ["10.210.1.1"] }));
  const badListen = await probe();
  notEqual(badListen.code, 0);
  match(badListen.stderr, /listen address "10.210.1.1" is not "ip:port"/);
});

Deno.test("ployzd dns hands its port back and exits when the spec's format is unknown", async () => {
  await using layout = await tempLayout();
  const specPath = join(layout.runDir, "dns.json");
  const port = await freeDnsPort();
  await writeDnsSpec(specPath, webShopSpec(port, ["10.210.1.5"]));
  await using dns = startDns(layout, dnsTestFlags(layout));
  await dns.waitFor(/Serving spec format 1/);
  ok(!(await udpFree(port)), "the port is taken while serving");
  await Deno.writeTextFile(specPath, JSON.stringify({ ...webShopSpec(port, ["10.210.1.5"]), format: 2 }));
  equal(await dns.exited(), 3);
  await dns.waitFor(/cannot be served by this build, port handed back: format 2/);
  ok(await udpFree(port), "UDP port freed");
  ok(await tcpFree(port), "TCP port freed");
});
