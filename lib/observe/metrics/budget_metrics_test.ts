import assert from "node:assert/strict";
import { join } from "node:path";
import { enforceBudget } from "../budget.ts";
import { openLogStore } from "../log_store.ts";
import { identity, T0, tempDir } from "../test_support.ts";
import { MetricStore } from "./metric_store.ts";

const HOUR_MS = 3600_000;
const T0_MS = Number(T0 / 1_000_000n);
const encoder = new TextEncoder();

Deno.test("past the size cap, the oldest hour of logs and metrics goes together", async () => {
  await using dir = await tempDir();
  const store = openLogStore({ path: join(dir.path, "observe.db") });
  try {
    const metrics = new MetricStore(store.database);
    const { key } = store.upsertContainer(identity());
    // Metrics start an hour before logs: hour 0 holds metrics only, hours 1–2 both.
    for (let h = 0; h < 3; h++) {
      for (let i = 0; i < 360; i++) {
        metrics.record({
          timeMs: T0_MS + h * HOUR_MS + i * 10_000,
          machine: { cpu: 1 },
          containers: [{ identity: identity(), values: { cpu: 0.5, memory: 1e6 }, markers: [], gone: false }],
        });
      }
      if (h === 0) continue;
      store.append(key, {
        entries: Array.from({ length: 500 }, (_, i) => ({
          stream: "stdout" as const,
          timeNano: T0 + BigInt(h * HOUR_MS + i * 1000) * 1_000_000n,
          line: encoder.encode(`hour ${h} ${"x".repeat(200)}`),
          partial: false,
          at: 0,
        })),
        corruptBytes: 0,
        gap: false,
        cursor: { ino: 1, head: new Uint8Array(), offset: 0 },
      });
    }
    const full = store.usedBytes();
    // One page under: deleting the oldest hour is enough.
    const report = enforceBudget(
      store,
      { maxBytes: full - 4096 },
      () => undefined,
      T0_MS + 4 * HOUR_MS,
      metrics,
    );
    assert.equal(report.reason, "size_cap");
    assert.equal(report.hoursDeleted, 1);
    assert.equal(report.linesDeleted, 0, "hour 0 held no lines");
    assert.equal(report.metricRowsDeleted, 720);
    assert.equal(metrics.oldestTimeNano(), T0 + BigInt(HOUR_MS) * 1_000_000n);

    const second = enforceBudget(
      store,
      { maxBytes: store.usedBytes() - 4096 },
      () => undefined,
      T0_MS + 4 * HOUR_MS,
      metrics,
    );
    assert.equal(second.hoursDeleted, 1);
    assert.deepEqual(
      [second.linesDeleted, second.metricRowsDeleted],
      [500, 720],
      "hour 1 of both kinds went together",
    );
    const lines = store.logHistory({ since: 0n, limit: 10_000 }).lines;
    const oldestLine = lines.length === 0 ? undefined : lines[0].timeNano;
    const oldestMetric = metrics.oldestTimeNano();
    const cut = T0 + BigInt((1 + second.hoursDeleted) * HOUR_MS) * 1_000_000n;
    assert.ok(oldestLine === undefined || oldestLine >= cut);
    assert.ok(oldestMetric === undefined || oldestMetric >= cut);
  } finally {
    store.close();
  }
});
