// What the mesh costs a container's HTTP request: one 2-Machine lab (root, Linux, dockerd with Docker's default
// networking, wireguard-go), a busybox httpd serving a 1 KiB file on m1 and on m2, and a client container on m1.
// Each case runs curl inside the client container's network namespace:
// - latency: 50 sequential requests (a new connection each, as busybox httpd closes after each answer);
// - throughput: 400 requests, 8 at a time.
// Baseline: the server on the same Machine (container to container over one bridge). The other case: the server on
// m2, through both Machines' WireGuard (wireguard-go) and the underlay. Ratios print in Deno's table; per-request
// p50/p99 (curl's time_total) and requests per second print at the end. Asserts nothing.
import { daemonClient, labUp, type MachinePlan } from "../../lib/lab/mod.ts";
import type { LabState } from "../../lib/lab/mod.ts";
import { eventually } from "../../tests/support/poll.ts";
import { LAB_READY, labBench, labDownSync, Series } from "./lab_support.ts";

const IMAGE = "ployz-test/busybox:1";
const SEQUENTIAL = 50;
const PARALLEL = { total: 400, at: 8 };

const decoder = new TextDecoder();
const perRequest = new Series();
const rates = new Series();
let state: LabState | undefined;
let clientPid = 0;
const servers: Record<string, string> = {};

function docker(m: MachinePlan, args: string[]): string {
  const out = new Deno.Command("docker", {
    args: ["-H", `unix://${m.dockerSocket}`, ...args],
    stdout: "piped",
  })
    .outputSync();
  if (!out.success) throw new Error(`docker ${args[0]} on ${m.name} failed`);
  return decoder.decode(out.stdout).trim();
}

/** `count` requests to the server on `server`'s Machine, as curl arguments. */
function urls(server: string, count: number): string[] {
  // `-o` applies to the URL after it: one per URL, so bodies never mix with the timings.
  return Array.from({ length: count }, () => ["-o", "/dev/null", `http://${servers[server]}/`]).flat();
}

/** curl inside the client container's namespace; returns each request's time_total in ms. */
function curl(args: string[]): number[] {
  const out = new Deno.Command("nsenter", {
    args: [`--net=/proc/${clientPid}/ns/net`, "--", "curl", "-sS", "-w", "%{time_total}\\n", ...args],
    stdout: "piped",
    stderr: "piped",
  }).outputSync();
  if (!out.success) throw new Error(`curl failed: ${decoder.decode(out.stderr)}`);
  return decoder.decode(out.stdout).trim().split("\n").map((s) => Number(s) * 1000);
}

async function setUp(): Promise<void> {
  const tag = crypto.randomUUID().slice(0, 4);
  ({ state } = await labUp({ machines: 2, dir: `/tmp/plz-bench-mesh-${tag}`, name: `bm${tag}` }));
  const [m1, m2] = state.plan.machines;
  const ids: Record<string, string> = {};
  for (const m of state.plan.machines) {
    using client = daemonClient(m);
    ids[m.name] = (await client.status()).machine.id;
  }
  const script = "mkdir -p /www && head -c 1024 /dev/zero | tr '\\0' x > /www/index.html && " +
    "exec httpd -f -p 80 -h /www";
  for (const m of [m1, m2]) {
    docker(m, ["run", "-d", "--name", "srv", "--network", "ployz", IMAGE, "sh", "-c", script]);
    servers[m.name] = docker(m, ["inspect", "-f", "{{.NetworkSettings.Networks.ployz.IPAddress}}", "srv"]);
  }
  docker(m1, ["run", "-d", "--name", "cli", "--network", "ployz", IMAGE, "sleep", "3600"]);
  clientPid = Number(docker(m1, ["inspect", "-f", "{{.State.Pid}}", "cli"]));
  // Until the mesh carries the first request (peers' handshakes happen on the first packet).
  await eventually(60_000, "the mesh carries a request to m2", () => {
    curl(["-m", "2", ...urls("m2", 1)]);
    return true;
  });
}

if (LAB_READY) {
  await setUp();
  globalThis.addEventListener("unload", () => {
    perRequest.print(2);
    for (const [series, values] of rates.entries()) {
      const mean = values.reduce((a, b) => a + b, 0) / values.length;
      console.log(`${series}: ${mean.toFixed(0)} requests/s (mean of ${values.length} runs)`);
    }
    if (state !== undefined) {
      labDownSync(state.plan.dir);
    }
  });
}

const CASES = [
  { name: "same Machine (bridge)", server: "m1", baseline: true },
  { name: "across the mesh (wireguard-go)", server: "m2", baseline: false },
];

for (const c of CASES) {
  labBench({
    name: `${SEQUENTIAL} sequential requests, ${c.name}`,
    group: "container HTTP latency",
    baseline: c.baseline,
    n: 20,
    warmup: 2,
    fn() {
      perRequest.record(`latency, ${c.name}`, ...curl(urls(c.server, SEQUENTIAL)));
    },
  });
}

for (const c of CASES) {
  labBench({
    name: `${PARALLEL.total} requests ${PARALLEL.at} at a time, ${c.name}`,
    group: "container HTTP throughput",
    baseline: c.baseline,
    n: 10,
    warmup: 1,
    fn() {
      const started = performance.now();
      curl(["--parallel", "--parallel-max", String(PARALLEL.at), ...urls(c.server, PARALLEL.total)]);
      rates.record(`throughput, ${c.name}`, PARALLEL.total / ((performance.now() - started) / 1000));
    },
  });
}
