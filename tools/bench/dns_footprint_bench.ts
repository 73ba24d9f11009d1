// Resident memory of `ployzd dns` with and without its V8 flags (lib/permissions/runtime_flags.ts): idle after
// starting, then after a dnsperf burst (RSS does not shrink afterwards, so the burst's size is what a busy
// Machine keeps), with the burst's queries per second. Prints figures; the bench case times one UDP query.
//
// `deno bench -A tools/bench/dns_footprint_bench.ts` (needs dnsperf, Debian package dnsperf).
import { join } from "node:path";
import { writeDnsSpec } from "../../lib/dns/mod.ts";
import { runtimeFlags } from "../../lib/permissions/mod.ts";
import {
  dnsperfArgs,
  dnsTestFlags,
  freeDnsPort,
  startDns,
  udpClient,
  webShopSpec,
} from "../../tests/support/dns.ts";
import { tempLayout } from "../../tests/support/spawn.ts";
import { sleep } from "../../tests/support/poll.ts";

function rssMb(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(status.match(/^VmRSS:\s+(\d+) kB/m)?.[1] ?? NaN) / 1024;
}

async function measure(label: string, v8: string[]): Promise<void> {
  await using layout = await tempLayout();
  const port = await freeDnsPort();
  await writeDnsSpec(join(layout.runDir, "dns.json"), webShopSpec(port, ["10.210.1.5"], []));
  await using dns = startDns(layout, [...v8, ...dnsTestFlags(layout)]);
  await dns.waitFor(/Serving spec/);
  const client = await udpClient(port);
  for (let i = 0; i < 20; i++) await client.query("web.shop.internal", 1000);
  await client.close();
  await sleep(5000);
  const idle = rssMb(dns.child.pid);
  const data = join(layout.root, "queries.txt");
  await Deno.writeTextFile(data, "web.shop.internal A\n".repeat(100));
  const perf = await new Deno.Command("dnsperf", {
    args: dnsperfArgs(port, data, { passes: 2000, clients: 4, outstanding: 64 }),
    stdout: "piped",
    stderr: "piped",
  }).output();
  const report = new TextDecoder().decode(perf.stdout);
  await sleep(3000);
  console.log(
    `ployzd dns ${label}: idle ${idle.toFixed(1)} MB, after ${
      report.match(/Queries completed:\s+(\d+)/)?.[1] ?? "?"
    } queries ${rssMb(dns.child.pid).toFixed(1)} MB ` +
      `(${report.match(/Queries per second:\s+([\d.]+)/)?.[1] ?? "?"} queries/s, lost ${
        report.match(/Queries lost:\s+(\d+)/)?.[1] ?? "?"
      })`,
  );
}

await measure("without V8 flags", []);
await measure(`with ${runtimeFlags("dns").join(" ")}`, runtimeFlags("dns"));

Deno.bench({ name: "an empty case (the figures above are the result)", n: 1, warmup: 0, fn() {} });
