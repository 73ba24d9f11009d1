import assert from "node:assert/strict";
import { join } from "node:path";
import { openLogStore } from "../log_store.ts";
import { createObserveApp } from "../server.ts";
import { tempDir } from "../test_support.ts";
import { MetricStore } from "./metric_store.ts";
import type { WireMetricHistory } from "./wire.ts";

function post(body: unknown): Request {
  return new Request("http://observe/observe/v1/metric_history", {
    method: "POST",
    body: JSON.stringify(body),
  });
}

Deno.test("POST /observe/v1/metric_history answers series with explicit gaps; a bad request is invalid_argument", async () => {
  await using dir = await tempDir();
  const store = openLogStore({ path: join(dir.path, "observe.db") });
  const stop = new AbortController();
  try {
    const metrics = new MetricStore(store.database);
    const now = Math.floor(Date.now() / 10_000) * 10_000;
    metrics.record({
      timeMs: now - 20_000,
      machine: { cpu: { gap: "first_sample" }, load1: 1 },
      containers: [],
    });
    const app = createObserveApp(store, stop.signal, { metrics });
    const response = await app.fetch(
      post({ machine: true, since: new Date(now - 30_000).toISOString(), step: 10 }),
    );
    assert.equal(response.status, 200);
    const body = (await response.json()) as WireMetricHistory;
    assert.equal(body.source, "raw");
    const points = body.series[0].points;
    assert.deepEqual(points[1].values.cpu, { gap: "first_sample" });
    assert.deepEqual(points[1].values.load1, { avg: 1, max: 1 });
    assert.deepEqual(points[0].values.load1, { gap: "not_sampled" });

    const bad = await app.fetch(post({ machine: true, service: "web", since: "0" }));
    assert.equal(bad.status, 400);
    assert.match((await bad.json()).message, /machine selects the Machine's own series/);
    const unknown = await app.fetch(post({ since: "0", colour: "red" }));
    assert.equal(unknown.status, 400);

    const without = createObserveApp(store, stop.signal);
    assert.equal((await without.fetch(post({ since: "0" }))).status, 503);
  } finally {
    stop.abort();
    store.close();
  }
});
