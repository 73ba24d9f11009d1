// Internal DNS against dnsmasq, measured in the same run: sequential UDP round trips (avg and p99 per query) and
// dnsperf throughput over a fixed number of queries (each ployzd pass prints its queries per second and its ratio
// to a dnsmasq pass run just before it). Both servers answer the same names from the same addresses with TTL 0.
// Needs dnsmasq and dnsperf (Debian packages dnsmasq-base and dnsperf); without them the comparison is skipped
// with a note.
// @ts-types="npm:@types/dns-packet@5.6.5"
import * as dnsPacket from "dns-packet";
import type { Buffer } from "node:buffer";
import dgram from "node:dgram";
import { join } from "node:path";
import { renderDnsSpec, writeDnsSpec } from "../../lib/dns/mod.ts";
import { layoutFromEnv, permissionFlags, permissionSet, relocate } from "../../lib/permissions/mod.ts";
import { sleep } from "../../lib/util/mod.ts";
import { dnsperfArgs, ployzdDnsArgs } from "../../tests/support/dns.ts";

const NAMES = ["web.shop.internal", "api.shop.internal", "db.shop.internal", "cache.blog.internal"];
const REPLICAS = ["10.210.1.5", "10.210.2.5", "10.210.3.5"];
const DNSPERF_PASSES = 10_000;

function which(program: string): string | undefined {
  for (const dir of ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]) {
    try {
      Deno.statSync(join(dir, program));
      return join(dir, program);
    } catch {
      // Not here.
    }
  }
  return undefined;
}

function freeUdpPort(): number {
  return 20000 + Math.floor(Math.random() * 20000);
}

const dnsmasq = which("dnsmasq");
const dnsperf = which("dnsperf");
const dir = Deno.makeTempDirSync({ prefix: "ployz-dns-bench-" });
const children: Deno.ChildProcess[] = [];
globalThis.addEventListener("unload", () => {
  for (const child of children) {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
  }
  Deno.removeSync(dir, { recursive: true });
});

async function startPloyz(): Promise<number> {
  const port = freeUdpPort();
  const env = { PLOYZ_RUN_DIR: dir, PLOYZ_DATA_DIR: join(dir, "data") };
  await writeDnsSpec(
    join(dir, "dns.json"),
    renderDnsSpec({
      machineId: "m1",
      listen: [`127.0.0.1:${port}`],
      upstreams: [],
      generatedAt: new Date(),
      services: NAMES.map((name) => {
        const [service, project] = name.split(".");
        return { project, service, replicas: REPLICAS.map((address) => ({ address, machineId: "m1" })) };
      }),
    }),
  );
  const set = relocate(permissionSet("dns"), layoutFromEnv((k) => env[k as keyof typeof env]));
  const flags = permissionFlags({ ...set, net: [...(Array.isArray(set.net) ? set.net : []), "127.0.0.1"] });
  children.push(
    new Deno.Command(Deno.execPath(), {
      args: ployzdDnsArgs(flags),
      env: { ...env, NO_COLOR: "1" },
      clearEnv: true,
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn(),
  );
  return port;
}

function startDnsmasq(binary: string): number {
  const port = freeUdpPort();
  const hosts = join(dir, "hosts");
  Deno.writeTextFileSync(hosts, NAMES.flatMap((n) => REPLICAS.map((a) => `${a} ${n}\n`)).join(""));
  Deno.chmodSync(dir, 0o755);
  Deno.chmodSync(hosts, 0o644);
  children.push(
    new Deno.Command(binary, {
      args: [
        "--keep-in-foreground",
        "--conf-file=/dev/null",
        `--port=${port}`,
        "--listen-address=127.0.0.1",
        "--bind-interfaces",
        "--no-resolv",
        "--no-hosts",
        `--addn-hosts=${hosts}`,
        "--pid-file=",
        "--local-ttl=0",
      ],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn(),
  );
  return port;
}

interface Client {
  query(name: string): Promise<void>;
}

async function client(port: number): Promise<Client> {
  const socket = dgram.createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  socket.unref();
  let id = 0;
  let pending: ((message: Buffer) => void) | undefined;
  socket.on("message", (message: Buffer) => pending?.(message));
  return {
    query(name: string): Promise<void> {
      const myId = (id = (id + 1) & 0xffff);
      const bytes = dnsPacket.encode({
        type: "query",
        id: myId,
        questions: [{ type: "A", name, class: "IN" }],
      });
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`No answer from 127.0.0.1:${port} for "${name}"`)),
          2000,
        );
        pending = (message) => {
          if (message.readUInt16BE(0) !== myId) return;
          clearTimeout(timer);
          resolve();
        };
        socket.send(bytes, port, "127.0.0.1");
      });
    },
  };
}

async function ready(c: Client): Promise<void> {
  for (let i = 0; i < 100; i++) {
    try {
      await c.query(NAMES[0]);
      return;
    } catch {
      await sleep(100);
    }
  }
  throw new Error("DNS server did not start");
}

async function runDnsperf(
  binary: string,
  port: number,
): Promise<{ qps: number; latencyMs: number; lost: number }> {
  const data = join(dir, "queries.txt");
  await Deno.writeTextFile(data, NAMES.map((n) => `${n} A\n`).join(""));
  const out = await new Deno.Command(binary, {
    args: dnsperfArgs(port, data, { passes: DNSPERF_PASSES, clients: 4, outstanding: 64 }),
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  const qps = Number(text.match(/Queries per second:\s+([\d.]+)/)?.[1]);
  const latencyMs = Number(text.match(/Average Latency \(s\):\s+([\d.]+)/)?.[1]) * 1000;
  const lost = Number(text.match(/Queries lost:\s+(\d+)/)?.[1] ?? 0);
  return { qps, latencyMs, lost };
}

const ployzPort = await startPloyz();
const ployz = await client(ployzPort);
await ready(ployz);
const masqPort = dnsmasq ? startDnsmasq(dnsmasq) : undefined;
const masq = masqPort === undefined ? undefined : await client(masqPort);
if (masq) await ready(masq);
if (!dnsmasq || !dnsperf) {
  console.log("dns bench: dnsmasq or dnsperf is missing (apt-get install dnsmasq-base dnsperf): no baseline");
}

let turn = 0;
if (masq) {
  Deno.bench("dnsmasq: one UDP query round trip", { group: "udp round trip", baseline: true }, async () => {
    await masq.query(NAMES[turn++ % NAMES.length]);
  });
}
Deno.bench("ployzd dns: one UDP query round trip", { group: "udp round trip" }, async () => {
  await ployz.query(NAMES[turn++ % NAMES.length]);
});

if (dnsperf && masqPort !== undefined) {
  const total = DNSPERF_PASSES * NAMES.length;
  Deno.bench(
    `dnsmasq: dnsperf ${total} queries`,
    { group: "dnsperf throughput", baseline: true, n: 3, warmup: 1 },
    async () => {
      const r = await runDnsperf(dnsperf, masqPort);
      console.log(
        `dnsmasq: ${r.qps.toFixed(0)} qps, avg latency ${r.latencyMs.toFixed(3)} ms, lost ${r.lost}`,
      );
    },
  );
  // Other work on the host moves both servers' figures by tens of percent within seconds, so each timed ployzd
  // pass is paired with a dnsmasq pass run just before it (untimed) and the ratio is taken within the pair.
  Deno.bench(
    `ployzd dns: dnsperf ${total} queries`,
    { group: "dnsperf throughput", n: 3, warmup: 1 },
    async (b) => {
      const masq = await runDnsperf(dnsperf, masqPort);
      b.start();
      const r = await runDnsperf(dnsperf, ployzPort);
      b.end();
      console.log(
        `ployzd dns: ${r.qps.toFixed(0)} qps, avg latency ${r.latencyMs.toFixed(3)} ms, lost ${r.lost}, ` +
          `${(r.qps / masq.qps).toFixed(2)}x dnsmasq's ${masq.qps.toFixed(0)} qps just before`,
      );
    },
  );
}
