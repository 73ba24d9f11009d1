import assert from "node:assert/strict";
import { join } from "node:path";
import type { ContainerIdentity } from "../containers.ts";
import { openLogStore } from "../log_store.ts";
import { tempDir } from "../test_support.ts";
import { metricHistory } from "./history.ts";
import { MetricStore, RAW_RETENTION_MS, ROLLUP_RETENTION_MS } from "./metric_store.ts";
import type { Values } from "./metric_names.ts";
import type { SampleRound } from "./sampler.ts";

const H = 3600_000;
// An hour boundary.
const T0 = Date.parse("2026-03-01T12:00:00Z");

function identity(n: number, service: string, deployment: string): ContainerIdentity {
  return {
    containerId: String(n).repeat(64).slice(0, 64),
    name: `c${n}`,
    machineId: "machine-1",
    project: "shop",
    service,
    deployment,
    slot: "0",
  };
}

const A = identity(1, "api", "dep-1");
const B = identity(2, "api", "dep-2");

function round(timeMs: number, containers: [ContainerIdentity, Values, boolean?][]): SampleRound {
  return {
    timeMs,
    machine: { cpu: 1, memory: 1000, load1: 0.5 },
    containers: containers.map(([identity, values, gone]) => ({
      identity,
      values,
      markers: [],
      gone: gone ?? false,
    })),
  };
}

async function withStore(body: (metrics: MetricStore) => void | Promise<void>): Promise<void> {
  await using dir = await tempDir();
  const store = openLogStore({ path: join(dir.path, "observe.db") });
  try {
    await body(new MetricStore(store.database));
  } finally {
    store.close();
  }
}

Deno.test("a closed hour folds into 5 minute Rollups per Service, Deployment and Machine, gaps counted", async () => {
  await withStore((metrics) => {
    // Two containers of one Service, one round every 10 s for the first 10 minutes of the hour.
    for (let i = 0; i < 60; i++) {
      const t = T0 + i * 10_000;
      metrics.record(round(t, [
        [A, { cpu: 0.5, memory: 100, "net_rx": 10, restarts: 0 }],
        [B, i % 2 === 0 ? { cpu: 0.25, memory: 50, "net_rx": 5, restarts: 0 } : { cpu: { gap: "no_pid" } }],
      ]));
    }
    const markersRound = round(T0 + 61 * 10_000, [[A, { cpu: 1 }]]);
    markersRound.containers[0].markers.push({ kind: "die", atMs: T0, detail: "1" }, {
      kind: "start",
      atMs: T0,
      detail: "",
    });
    metrics.record(markersRound);
    assert.equal(metrics.maintain(T0 + 30 * 60_000).hoursFolded, 0, "the hour is still open");
    const report = metrics.maintain(T0 + H + 1);
    assert.equal(report.hoursFolded, 1);
    assert.equal(metrics.foldedUntilMs(), T0 + H);

    const service = metrics.rollups("service", T0, T0 + H, { service: "api" });
    assert.deepEqual(service.map((r) => r.bucket.startMs), [T0, T0 + 300_000, T0 + 600_000]);
    const b0 = service[0].bucket;
    assert.equal(b0.rounds, 30);
    assert.equal(b0.samples, 60);
    // Rounds with both containers: 0.75; rounds with only A readable: 0.5.
    assert.equal(b0.metrics.cpu!.n, 30);
    assert.equal(b0.metrics.cpu!.max, 0.75);
    assert.equal(b0.metrics.cpu!.sum, 15 * 0.75 + 15 * 0.5);
    assert.equal(b0.metrics["net_rx"]!.sum, 30 * 10 + 15 * 5);
    assert.deepEqual(b0.gaps, { cpu: { "no_pid": 15 } });
    assert.equal(b0.gapCount, 15);
    assert.deepEqual(service[2].bucket.markers, { start: 1, die: 1, oom: 0, health: 0 });

    const deployments = metrics.rollups("deployment", T0, T0 + H, {});
    assert.deepEqual([...new Set(deployments.map((r) => r.labels.deployment))].sort(), ["dep-1", "dep-2"]);
    const machine = metrics.rollups("machine", T0, T0 + H, {});
    assert.equal(machine[0].labels.machineId, "machine-1");
    assert.equal(machine[0].bucket.metrics.load1!.sum / machine[0].bucket.metrics.load1!.n, 0.5);
  });
});

Deno.test("raw samples go after 24 h, Rollups after 90 days; a removed container's history stays under its Service", async () => {
  await withStore((metrics) => {
    metrics.record(round(T0, [[A, { cpu: 2 }], [B, { cpu: 1 }]]));
    metrics.record(round(T0 + 10_000, [[A, { cpu: { gap: "container_gone" } }, true], [B, { cpu: 1 }]]));
    metrics.maintain(T0 + 2 * H);
    assert.equal(metrics.rawSamples(T0, T0 + H, {}).length, 6);

    metrics.maintain(T0 + RAW_RETENTION_MS + 20_000);
    assert.equal(metrics.rawSamples(0, Infinity, {}).length, 0, "raw samples past 24 h are gone");
    const kept = metrics.rollups("service", 0, Infinity, { service: "api" });
    assert.equal(kept.length, 1);
    assert.equal(kept[0].bucket.metrics.cpu!.max, 3, "the removed container still counts in its Service");

    const history = metricHistory(metrics, { service: "api", sinceMs: T0 - H, untilMs: T0 + H }, T0 + 30 * H);
    assert.equal(history.source, "rollup");
    const points = history.series[0].points.filter((p) => p.samples > 0);
    assert.deepEqual(points.map((p) => p.values.cpu), [{ avg: 2, max: 3 }]);
    assert.deepEqual(points[0].gaps, { cpu: { "container_gone": 1 } });

    metrics.maintain(T0 + ROLLUP_RETENTION_MS + H);
    assert.equal(metrics.rollups("service", 0, Infinity, {}).length, 0, "Rollups past 90 days are gone");
    assert.equal(metrics.oldestTimeNano(), undefined);
  });
});

Deno.test("raw history: points per step, a step without samples is not_sampled, never zero", async () => {
  await withStore((metrics) => {
    metrics.record(round(T0, [[A, { cpu: 0.5, memory: 10, "net_rx": 100 }]]));
    // 20 s without a round, then one whose CPU could not be read.
    metrics.record(
      round(T0 + 30_000, [[A, { cpu: { gap: "cgroup_file_unreadable" }, memory: 12, "net_rx": 0 }]]),
    );
    const h = metricHistory(
      metrics,
      { project: "shop", service: "api", sinceMs: T0, untilMs: T0 + 40_000 },
      T0 + 60_000,
    );
    assert.equal(h.source, "raw");
    assert.equal(h.stepMs, 10_000);
    const [series] = h.series;
    assert.deepEqual(series.containers, [A.containerId]);
    assert.deepEqual(series.points.map((p) => p.values.cpu), [
      { avg: 0.5, max: 0.5 },
      { gap: "not_sampled" },
      { gap: "not_sampled" },
      { gap: "cgroup_file_unreadable" },
    ]);
    assert.deepEqual(series.points[3].values["net_rx"], { sum: 0 }, "a read zero stays a zero");
    assert.deepEqual(series.points[0].values.restarts, { gap: "not_sampled" });

    const machine = metricHistory(metrics, { machine: true, sinceMs: T0, untilMs: T0 + 40_000 }, T0 + 60_000);
    assert.equal(machine.series.length, 1);
    assert.equal(machine.series[0].scope, "machine");
    assert.deepEqual(machine.series[0].points[0].values.load1, { avg: 0.5, max: 0.5 });
    assert.deepEqual(machine.series[0].points[0].values["disk_free"], { gap: "not_sampled" });

    assert.throws(
      () => metricHistory(metrics, { sinceMs: T0, untilMs: T0 + 400 * 24 * H, stepMs: 1000 }, T0),
      /exceed the limit/,
    );
  });
});

Deno.test("beyond 24 h, Rollups answer and the hours not folded yet come from raw samples", async () => {
  await withStore((metrics) => {
    metrics.record(round(T0, [[A, { cpu: 1 }]]));
    metrics.maintain(T0 + H + 5);
    metrics.record(round(T0 + H + 10_000, [[A, { cpu: 3 }]]));
    const h = metricHistory(metrics, { service: "api", sinceMs: T0 - 48 * H, stepMs: H }, T0 + H + 20_000);
    assert.equal(h.source, "rollup");
    const sampled = h.series[0].points.filter((p) => p.samples > 0).map((p) => p.values.cpu);
    assert.deepEqual(sampled, [{ avg: 1, max: 1 }, { avg: 3, max: 3 }]);
  });
});
