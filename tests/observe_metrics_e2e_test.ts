// The metric sampler against a real dockerd: a busybox container burning CPU and an idle one, labelled as Ployz
// containers, sampled by the real Sampler from Docker's data root, /sys/fs/cgroup and /proc; the busy one uses
// more than half a core, the idle one about none; a removed container becomes the gap container_gone and its
// history stays.
import assert from "node:assert/strict";
import { join } from "node:path";
import Docker from "dockerode";
import { metricHistory, MetricStore, openLogStore, Sampler } from "../lib/observe/mod.ts";
import { DOCKER_SOCKET, dockerRootOf, IMAGE } from "./support/docker.ts";
import { needs } from "./support/needs.ts";
import { sleep } from "./support/poll.ts";

Deno.test(needs(["docker"], {
  name: "the sampler reads a busy and an idle real container, and a removed one becomes container_gone",
  async fn(): Promise<void> {
    const docker = new Docker({ socketPath: DOCKER_SOCKET });
    const dockerRoot = await dockerRootOf(docker);
    const run = crypto.randomUUID().slice(0, 8);
    const dir = await Deno.makeTempDir({ prefix: "ployz-metrics-e2e-" });
    const store = openLogStore({ path: join(dir, "observe.db") });
    // deno-lint-ignore no-explicit-any
    const containers: any[] = [];
    try {
      const make = async (service: string, script: string) => {
        const c = await docker.createContainer({
          Image: IMAGE,
          name: `ployz-metrics-e2e-${service}-${run}`,
          Cmd: ["sh", "-c", script],
          Labels: {
            "ployz.managed": "1",
            "ployz.machine": "machine-e2e",
            "ployz.project": `metrics-${run}`,
            "ployz.service": service,
            "ployz.deployment": "dep-e2e",
            "ployz.slot": "0",
          },
          HostConfig: { LogConfig: { Type: "local", Config: {} } },
        });
        containers.push(c);
        await c.start();
        return c;
      };
      await make("busy", "while :; do :; done");
      const idle = await make("idle", "sleep 600");
      const busyId = containers[0].id as string;
      const idleId = idle.id as string;

      const metrics = new MetricStore(store.database);
      const sampler = new Sampler({ dockerRoot });
      const t0 = Date.now();
      metrics.record(sampler.sample(t0));
      await sleep(4000);
      const t1 = Date.now();
      const round = sampler.sample(t1);
      metrics.record(round);
      const of = (id: string) => round.containers.find((c) => c.identity.containerId === id);
      const busy = of(busyId)!.values;
      const quiet = of(idleId)!.values;
      assert.ok(typeof busy.cpu === "number" && busy.cpu > 0.5, `busy CPU ${JSON.stringify(busy.cpu)}`);
      assert.ok(
        typeof busy.memory === "number" && busy.memory > 0,
        `busy memory ${JSON.stringify(busy.memory)}`,
      );
      assert.ok(typeof quiet.cpu === "number" && quiet.cpu < 0.05, `idle CPU ${JSON.stringify(quiet.cpu)}`);
      assert.ok(typeof quiet.memory === "number" && quiet.memory > 0);
      assert.equal(typeof busy["net_rx"], "number", `net ${JSON.stringify(busy["net_rx"])}`);
      assert.equal(busy.restarts, 0);
      assert.ok(typeof round.machine.cpu === "number" && round.machine.cpu > 0.5);
      assert.ok(typeof round.machine.memory === "number" && round.machine.memory > 0);

      await idle.remove({ force: true });
      containers.pop();
      const t2 = Date.now() + 1;
      const after = sampler.sample(t2);
      metrics.record(after);
      const gone = after.containers.find((c) => c.identity.containerId === idleId);
      assert.ok(gone?.gone);
      assert.deepEqual(gone.values.cpu, { gap: "container_gone" });

      const h = metricHistory(
        metrics,
        // One point per ms: each round its own point.
        { project: `metrics-${run}`, service: "idle", sinceMs: t0, untilMs: t2 + 1, stepMs: 1 },
        t2 + 1,
        1,
      );
      const points = h.series[0].points.filter((p) => p.samples > 0);
      assert.equal(points.length, 3, "history kept after removal");
      assert.deepEqual(points[2].values.cpu, { gap: "container_gone" });
      assert.equal(typeof (points[1].values.memory as { avg: number }).avg, "number");
    } finally {
      for (const c of containers) await c.remove({ force: true }).catch(() => {});
      store.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
