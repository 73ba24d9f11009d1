// Entry Machine routing on a real 3-Machine lab (clean profile; root, Linux, dockerd, wireguard-go):
// - DescribeContract of m2 straight on m2's socket (baseline) vs from m1's socket forwarded to m2 over the mesh;
// - image transfer m1 → m2 (`ployz.image.pull_from_peer.v1`, m2 fetching m1's `docker save` over the mesh and
//   loading it); baseline: the same image saved and loaded on m1's own dockerd through the daemon's client-side
//   path (`ployz.image.export.v1` read in full), so the ratio shows what the mesh and the load add.
// p50/p99 of every series and the transfer throughput are printed at the end, next to Deno's own table.
import { daemonClient, type LabState, labUp } from "../../lib/lab/mod.ts";
import { type MachineClient, viaEntry } from "../../lib/rpc/mod.ts";
import { sleep } from "../../lib/util/mod.ts";
import { LAB_READY, labBench, labDownSync, percentile, Series } from "./lab_support.ts";

const IMAGE = "ployz-test/busybox:1";

const samples = new Series();
const rates: number[] = [];
let lab: { state: LabState; ids: Record<string, string>; clients: Record<string, MachineClient> } | undefined;
let serial = 0;

function docker(machine: string, args: string[]): void {
  const m = lab!.state.plan.machines.find((x) => x.name === machine)!;
  const out = new Deno.Command("docker", {
    args: ["-H", `unix://${m.dockerSocket}`, ...args],
    stdout: "null",
  })
    .outputSync();
  if (!out.success) throw new Error(`docker ${args[0]} on ${machine} failed`);
}

async function setUp(): Promise<void> {
  const tag = crypto.randomUUID().slice(0, 4);
  const { state } = await labUp({
    machines: 3,
    dir: `/tmp/plz-rbench-${tag}`,
    name: `rb${tag}`,
    profile: "clean",
  });
  const ids: Record<string, string> = {};
  const clients: Record<string, MachineClient> = {};
  for (const m of state.plan.machines) {
    clients[m.name] = daemonClient(m);
    ids[m.name] = (await clients[m.name].status()).machine.id;
  }
  lab = { state, ids, clients };
  // The mesh is up once m1 reaches m2 through forwarding.
  const via = viaEntry(clients.m1, ids.m2);
  for (let i = 0;; i++) {
    try {
      await via.describeContract();
      break;
    } catch (error) {
      if (i > 120) throw error;
      await sleep(500);
    }
  }
}

if (LAB_READY) {
  await setUp();
  globalThis.addEventListener("unload", () => {
    samples.print(2);
    if (rates.length > 0) {
      console.log(
        `image transfer m1 → m2: median ${
          percentile(rates, 0.5).toFixed(1)
        } MB/s over ${rates.length} copies`,
      );
    }
    for (const c of Object.values(lab!.clients)) c.close();
    labDownSync(lab!.state.plan.dir);
  });
}

labBench({
  name: "describe_contract on m2's own socket",
  group: "describe_contract",
  baseline: true,
  n: 300,
  warmup: 20,
  async fn(b) {
    b.start();
    const t0 = performance.now();
    await lab!.clients.m2.describeContract();
    b.end();
    samples.record("describe_contract direct", performance.now() - t0);
  },
});

labBench({
  name: "describe_contract of m2 from m1's socket, forwarded",
  group: "describe_contract",
  n: 300,
  warmup: 20,
  async fn(b) {
    const via = viaEntry(lab!.clients.m1, lab!.ids.m2);
    b.start();
    const t0 = performance.now();
    await via.describeContract();
    b.end();
    samples.record("describe_contract via Entry", performance.now() - t0);
  },
});

labBench({
  name: "image export read in full on m1's own socket",
  group: "image transfer",
  baseline: true,
  n: 5,
  warmup: 1,
  async fn(b) {
    b.start();
    const t0 = performance.now();
    const stream = await lab!.clients.m1.exportImage({ ref: IMAGE });
    await stream.pipeTo(new WritableStream());
    b.end();
    samples.record("image export local", performance.now() - t0);
  },
});

labBench({
  name: "image pull m1 → m2 over the mesh and load",
  group: "image transfer",
  n: 5,
  warmup: 1,
  async fn(b) {
    const ref = `ployz-bench/copy:${++serial}`;
    docker("m1", ["tag", IMAGE, ref]);
    b.start();
    const t0 = performance.now();
    const answer = await lab!.clients.m2.pullImageFromPeer({ ref, "from_machine_id": lab!.ids.m1 });
    b.end();
    samples.record("image pull m1 → m2", performance.now() - t0);
    rates.push(answer.bytes / 1_000_000 / (answer.duration_ms / 1000));
    docker("m2", ["rmi", ref]);
    docker("m1", ["rmi", ref]);
  },
});
