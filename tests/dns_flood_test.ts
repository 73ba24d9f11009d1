// `ployzd dns` under a flood of forwarded queries, as a real process under the dns permission set, its V8 flags
// and systemd's default descriptor limit (soft 1024): dnsperf sends 10,000 queries for names outside `.internal`,
// 2,000 a second, to an upstream that never answers, so up to 6,000 wait at once (each forward waits 3 s). The process stays up, keeps answering `.internal` names during the
// flood, and refuses the excess with SERVFAIL at once instead of opening a socket per query.
import { equal, ok } from "node:assert/strict";
import dgram from "node:dgram";
import { join } from "node:path";
import { writeDnsSpec } from "../lib/dns/mod.ts";
import { runtimeFlags } from "../lib/permissions/mod.ts";
import { dnsperfArgs, dnsTestFlags, freeDnsPort, startDns, udpQuery, webShopSpec } from "./support/dns.ts";
import { run, tempLayout } from "./support/spawn.ts";
import { sleep } from "./support/poll.ts";

const QUERIES = 10_000;

Deno.test("ployzd dns stays up and answers .internal under a flood of 10k forwarded queries", async () => {
  if ((await run("sh", ["-c", "command -v dnsperf && command -v prlimit"])).code !== 0) {
    throw new Error("dnsperf and prlimit are needed (apt-get install dnsperf util-linux)");
  }
  await using layout = await tempLayout();
  const silent = dgram.createSocket("udp4");
  await new Promise<void>((resolve) => silent.bind(0, "127.0.0.1", resolve));
  try {
    const port = await freeDnsPort();
    await writeDnsSpec(
      join(layout.runDir, "dns.json"),
      webShopSpec(port, ["10.210.1.5"], [`127.0.0.1:${silent.address().port}`]),
    );
    // With the V8 flags of the installed unit: the heap they leave must hold the flood.
    await using dns = startDns(layout, [...runtimeFlags("dns"), ...dnsTestFlags(layout)]);
    await dns.waitFor(/Serving spec/);
    const limited = await run("prlimit", [`--pid=${dns.child.pid}`, "--nofile=1024:1024"]);
    equal(limited.code, 0, limited.stderr);

    const data = join(layout.runDir, "queries.txt");
    await Deno.writeTextFile(
      data,
      Array.from({ length: QUERIES }, (_, i) => `n${i}.example.com A\n`).join(""),
    );
    const started = performance.now();
    const flood = run("dnsperf", [
      ...dnsperfArgs(port, data, { passes: 1, clients: 20, outstanding: QUERIES }),
      "-t",
      "8",
      // Sent at a bounded rate: the limit on forwards in flight is what is tested, not how many datagrams this
      // host's default socket buffer holds while a loaded CPU is away from the process.
      "-Q",
      "2000",
    ]);
    // While the flood is outstanding, a name under .internal is still answered at once.
    await sleep(500);
    const during = await udpQuery(port, "web.shop.internal", 2000);
    const perf = await flood;
    const seconds = (performance.now() - started) / 1000;
    const completed = Number(/Queries completed:\s+(\d+)/.exec(perf.stdout)?.[1] ?? NaN);
    const servfail = Number(/SERVFAIL\s+(\d+)/.exec(perf.stdout)?.[1] ?? 0);
    console.log(
      `dnsperf: ${completed}/${QUERIES} completed (${servfail} SERVFAIL) in ${seconds.toFixed(1)} s; ` +
        `.internal during the flood: ${JSON.stringify(during)}`,
    );
    equal(perf.code, 0, perf.stderr);
    equal("error" in during ? during.error : during.addresses.join(","), "10.210.1.5");
    ok(completed >= QUERIES * 0.9, `only ${completed} of ${QUERIES} queries were answered:\n${perf.stdout}`);
    const after = await udpQuery(port, "web.shop.internal", 2000);
    equal("error" in after ? after.error : after.addresses.join(","), "10.210.1.5");
    equal(dns.lines.filter((l) => /error|uncaught/i.test(l)).join("\n"), "");
  } finally {
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  }
});
