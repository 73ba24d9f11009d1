// Resident memory of `ployzd dns` as installed (lib/permissions/runtime_flags.ts: no deno.json, its V8 flags)
// against reading deno.json and against V8's defaults: idle after starting, then after a dnsperf burst (RSS does
// not shrink afterwards, so the burst's size is what a busy Machine keeps), with the burst's queries per second.
// Each case runs PLOYZ_BENCH_SAMPLES times (default 3), the cases alternating, so the host's drift falls on all
// of them. Prints figures; the bench case times nothing.
//
// `deno bench -A tools/bench/dns_footprint_bench.ts` (needs dnsperf, Debian package dnsperf).
import { join } from "node:path";
import { writeDnsSpec } from "../../lib/dns/mod.ts";
import { configFlags, runtimeFlags } from "../../lib/permissions/mod.ts";
import { stopChild } from "../../lib/util/mod.ts";
import { dnsperfArgs, dnsTestFlags, freeDnsPort, udpClient, webShopSpec } from "../../tests/support/dns.ts";
import { ROOT, tempLayout } from "../../tests/support/spawn.ts";
import { sleep } from "../../tests/support/poll.ts";

const CASES: [string, string[]][] = [
  ["as installed", [...configFlags("dns"), ...runtimeFlags("dns")]],
  ["reading deno.json", [...configFlags("serve", join(ROOT, "deno.json")), ...runtimeFlags("dns")]],
  ["V8 defaults", configFlags("dns")],
];

function memory(pid: number): { rss: number; anon: number; file: number } {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const mb = (key: string): number =>
    Number(status.match(new RegExp(`^${key}:\\s+(\\d+) kB`, "m"))?.[1] ?? NaN) / 1024;
  return { rss: mb("VmRSS"), anon: mb("RssAnon"), file: mb("RssFile") };
}

function shown(m: { rss: number; anon: number; file: number }): string {
  return `${m.rss.toFixed(1)} MB (anon ${m.anon.toFixed(1)}, file ${m.file.toFixed(1)})`;
}

async function measure(label: string, flags: string[]): Promise<void> {
  await using layout = await tempLayout();
  const port = await freeDnsPort();
  await writeDnsSpec(join(layout.runDir, "dns.json"), webShopSpec(port, ["10.210.1.5"], []));
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      ...flags,
      ...dnsTestFlags(layout),
      join(ROOT, "cmd", "ployzd.ts"),
      "dns",
    ],
    env: { ...layout.env, NO_COLOR: "1" },
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const log = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  try {
    let said = "";
    while (!/Serving spec/.test(said)) {
      const chunk = await log.read();
      if (chunk.done) throw new Error(`ployzd dns ${label} ended before it served:\n${said}`);
      said += chunk.value;
    }
    const client = await udpClient(port);
    for (let i = 0; i < 20; i++) await client.query("web.shop.internal", 1000);
    await client.close();
    await sleep(5000);
    const idle = memory(child.pid);
    const data = join(layout.root, "queries.txt");
    await Deno.writeTextFile(data, "web.shop.internal A\nnone.shop.internal A\n".repeat(50));
    const perf = await new Deno.Command("dnsperf", {
      args: dnsperfArgs(port, data, { passes: 1000, clients: 4, outstanding: 64 }),
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(120_000),
    }).output();
    const report = new TextDecoder().decode(perf.stdout);
    await sleep(3000);
    console.log(
      `ployzd dns ${label}: idle ${shown(idle)}; after ${
        report.match(/Queries completed:\s+(\d+)/)?.[1] ?? "?"
      } queries ${shown(memory(child.pid))} (${
        report.match(/Queries per second:\s+([\d.]+)/)?.[1] ?? "?"
      } queries/s, lost ${report.match(/Queries lost:\s+(\d+)/)?.[1] ?? "?"})`,
    );
  } finally {
    await stopChild(child, { signal: "SIGKILL" });
    await log.cancel().catch(() => {});
  }
}

const samples = Number(Deno.env.get("PLOYZ_BENCH_SAMPLES") ?? 3);
for (let i = 0; i < samples; i++) {
  for (const [label, flags] of CASES) await measure(`${label} (${flags.join(" ")})`, flags);
}

Deno.bench({ name: "an empty case (the figures above are the result)", n: 1, warmup: 0, fn() {} });
