// A start-first redeploy under load through real Caddy: request errors and p99 latency while the pointer moves
// from one Deployment to the next and the old containers retire, against the same load with no redeploy.
// Needs the dev dockerd (PLOYZ_DOCKER_SOCKET); figures print as lines, time ratios come from Deno.bench.
import Docker from "dockerode";
import { openEngine } from "../../lib/deploy/mod.ts";
import {
  ingressContainerSpec,
  SERVING_LABELS,
  setServingPointer,
  startServingLoop,
} from "../../lib/serving/mod.ts";
import { openStore } from "../../lib/store/mod.ts";
import { backendSpec, buildCaddyImage, get, publishAll } from "../../tests/support/caddy.ts";
import { sleep } from "../../lib/util/mod.ts";
import { DOCKER_SOCKET, lacking } from "../../tests/support/needs.ts";

const present = lacking("docker") === undefined;
const INGRESS = JSON.stringify([{
  hostname: "app.test",
  "lb_port": 80,
  "container_port": 80,
  protocol: "http",
}]);
const REQUESTS = 400;

async function scenario(redeploy: boolean): Promise<void> {
  const id = crypto.randomUUID().slice(0, 8);
  const machineId = `bench-${id}`;
  const network = `ployz-bench-${id}`;
  const engine = openEngine({
    socketPath: DOCKER_SOCKET,
    machineId,
    network,
    extraLabels: { "ployz.test": id },
  });
  const raw = new Docker({ socketPath: DOCKER_SOCKET });
  const runDir = await Deno.makeTempDir({ prefix: "ployz-bench-" });
  const store = openStore({ path: ":memory:", siteId: machineId, clusterId: "bench" });
  store.machines.put({ id: machineId, name: "bench" });
  let loop: Awaited<ReturnType<typeof startServingLoop>> | undefined;
  try {
    await buildCaddyImage(DOCKER_SOCKET);
    const b = 100 + Math.floor(Math.random() * 150);
    await engine.ensureNetwork({ name: network, subnet: `10.207.${b}.0/24`, gateway: `10.207.${b}.1` });
    await Deno.mkdir(`${runDir}/caddy`);
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    listener.close();
    const proxy = await engine.createContainer({
      ...ingressContainerSpec({
        machineId,
        runDir,
        httpPort: port,
        httpsPort: null,
        deployment: "sys",
        network,
      }),
    });
    await engine.startContainer(proxy.id);
    const spec = (suffix: string, deployment: string) =>
      backendSpec(
        (s, o) => ({
          name: `ployz-bench-${id}-${s}`,
          creationKey: `ck-${id}-${s}`,
          project: "proj",
          service: "web",
          deployment,
          slot: s,
          image: "ployz-test/busybox:1",
          stopGraceSeconds: 1,
          ...o,
        }),
        suffix,
        "web",
        deployment,
        network,
        { [SERVING_LABELS.ingress]: INGRESS },
      );
    for (const s of ["a1", "a2"]) {
      await engine.startContainer((await engine.createContainer(spec(s, "A"))).id);
    }
    await publishAll(engine, store);
    setServingPointer(store, { project: "proj", service: "web", deployment: "A" });
    for (let i = 0; i < 100 && !(await Deno.stat(`${runDir}/caddy/admin.sock`).catch(() => false)); i++) {
      await sleep(100);
    }
    loop = await startServingLoop({
      store,
      engine,
      runDir,
      dnsListen: [],
      tickMs: 60_000,
      retireAfterMs: 600_000,
    });
    const latencies: number[] = [];
    let errors = 0;
    let sent = 0;
    let switching = redeploy;
    const load = Promise.all([0, 1].map(async () => {
      // Bounded: at least REQUESTS, and on through the whole switch, never past 20 000.
      while ((sent < REQUESTS || switching) && sent < 20_000) {
        sent++;
        const t = performance.now();
        try {
          if ((await get(port, "app.test")).status !== 200) errors++;
        } catch {
          errors++;
        }
        latencies.push(performance.now() - t);
      }
    }));
    if (redeploy) {
      for (const s of ["b1", "b2"]) {
        await engine.startContainer((await engine.createContainer(spec(s, "B"))).id);
      }
      await publishAll(engine, store);
      setServingPointer(store, { project: "proj", service: "web", deployment: "B" });
      await loop.pass();
      await loop.pass();
      await publishAll(engine, store);
      switching = false;
    }
    await load;
    latencies.sort((x, y) => x - y);
    const p99 = latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))];
    console.log(
      `serving ${redeploy ? "redeploy" : "steady"}: ${latencies.length} requests, ${errors} errors, p99 ${
        p99.toFixed(2)
      } ms`,
    );
  } finally {
    await loop?.stop();
    store.close();
    for (const c of await raw.listContainers({ all: true, filters: { label: [`ployz.test=${id}`] } })) {
      await raw.getContainer(c.Id).remove({ force: true }).catch(() => {});
    }
    for (const n of await raw.listNetworks({ filters: { label: [`ployz.test=${id}`] } })) {
      await raw.getNetwork(n.Id).remove().catch(() => {});
    }
    await Deno.remove(runDir, { recursive: true }).catch(() => {});
  }
}

Deno.bench({
  name: "steady load through Caddy, no redeploy",
  group: "redeploy",
  baseline: true,
  ignore: !present,
  n: 1,
  warmup: 0,
  async fn(): Promise<void> {
    await scenario(false);
  },
});

Deno.bench({
  name: "start-first redeploy under load (pointer move, ack, retire)",
  group: "redeploy",
  ignore: !present,
  n: 1,
  warmup: 0,
  async fn(): Promise<void> {
    await scenario(true);
  },
});
