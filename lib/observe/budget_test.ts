import assert from "node:assert/strict";
import { join } from "node:path";
import {
  budgetFromEnv,
  DEFAULT_MAX_BYTES,
  DEFAULT_MIN_FREE_BYTES,
  diskSpace,
  enforceBudget,
  freeFloor,
} from "./budget.ts";
import { type LogStore, openLogStore } from "./log_store.ts";
import { ObserveError } from "./errors.ts";
import { identity, T0, tempDir } from "./test_support.ts";

const HOUR = 3_600_000_000_000n;
const encoder = new TextEncoder();

/** Fills hours 0..hours-1 after T0 with `perHour` lines of ~200 bytes each. */
function fill(store: LogStore, hours: number, perHour: number): void {
  const { key } = store.upsertContainer(identity());
  for (let h = 0; h < hours; h++) {
    const entries = Array.from({ length: perHour }, (_, i) => ({
      stream: "stdout" as const,
      timeNano: T0 + BigInt(h) * HOUR + BigInt(i) * 1_000_000_000n,
      line: encoder.encode(`hour ${h} line ${i} ${"x".repeat(200)}`),
      partial: false,
      at: 0,
    }));
    store.append(key, {
      entries,
      corruptBytes: 0,
      gap: false,
      cursor: { ino: 1, head: new Uint8Array(), offset: 0 },
    });
  }
}

function hoursLeft(store: LogStore): number[] {
  const lines = store.logHistory({ since: 0n, limit: 10_000 }).lines;
  return [...new Set(lines.map((l) => Number((l.timeNano - T0) / HOUR)))];
}

const NOW_MS = Number(T0 / 1_000_000n) + 4 * 3600_000;

Deno.test("past the size cap, the oldest hour goes first and only as many hours as needed", async () => {
  await using dir = await tempDir();
  const store = openLogStore({ path: join(dir.path, "observe.db") });
  try {
    fill(store, 3, 1000);
    const full = store.usedBytes();
    const report = enforceBudget(store, { maxBytes: Math.floor(full * 0.8) }, () => undefined, NOW_MS);
    assert.equal(report.reason, "size_cap");
    assert.equal(report.hoursDeleted, 1);
    assert.equal(report.linesDeleted, 1000);
    assert.deepEqual(hoursLeft(store), [1, 2]);
    assert.ok(store.usedBytes() <= full * 0.8);

    const second = enforceBudget(store, { maxBytes: Math.floor(full * 0.2) }, () => undefined, NOW_MS);
    assert.equal(second.hoursDeleted, 2);
    assert.equal(second.stillOver, false);
    assert.deepEqual(hoursLeft(store), []);
  } finally {
    store.close();
  }
});

Deno.test("below the disk free floor, the oldest hour goes first and deleting returns the space", async () => {
  await using dir = await tempDir();
  const path = join(dir.path, "observe.db");
  const store = openLogStore({ path });
  try {
    fill(store, 3, 1000);
    store.database.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    const onDisk = (): number => Deno.statSync(path).size + Deno.statSync(`${path}-wal`).size;
    const sizeBefore = onDisk();
    // A disk of 2.8 × the store's size with a floor of 2 ×: one hour less (a third) brings it back above.
    const capacity = sizeBefore * 2.8;
    const disk = () => ({ free: capacity - onDisk(), total: capacity });
    const report = enforceBudget(
      store,
      { maxBytes: DEFAULT_MAX_BYTES, minFreeBytes: sizeBefore * 2 },
      disk,
      NOW_MS,
    );
    assert.equal(report.reason, "free_floor");
    assert.equal(report.hoursDeleted, 1);
    assert.deepEqual(hoursLeft(store), [1, 2]);
    assert.ok(onDisk() < sizeBefore * 0.8, "the file shrank (incremental vacuum)");
  } finally {
    store.close();
  }
});

Deno.test("lines past the age cap go regardless of size", async () => {
  await using dir = await tempDir();
  const store = openLogStore({ path: join(dir.path, "observe.db") });
  try {
    fill(store, 3, 10);
    const report = enforceBudget(
      store,
      { maxBytes: DEFAULT_MAX_BYTES, maxAgeMs: 2.5 * 3600_000 },
      () => undefined,
      NOW_MS,
    );
    assert.equal(report.reason, "age_cap");
    assert.equal(report.hoursDeleted, 0);
    assert.deepEqual(hoursLeft(store), [2]);
  } finally {
    store.close();
  }
});

Deno.test("the budget reads its environment, and the free floor is the larger of 1 GiB and 5 %", () => {
  assert.deepEqual(budgetFromEnv(() => undefined), { maxBytes: DEFAULT_MAX_BYTES });
  const env: Record<string, string> = {
    PLOYZ_OBSERVE_MAX_BYTES: "64m",
    PLOYZ_OBSERVE_MIN_FREE_BYTES: "2147483648",
  };
  assert.deepEqual(budgetFromEnv((k) => env[k]), { maxBytes: 64 * 1024 * 1024, minFreeBytes: 2 ** 31 });
  assert.throws(
    () => budgetFromEnv((k) => (k === "PLOYZ_OBSERVE_MAX_BYTES" ? "lots" : undefined)),
    (e: unknown) =>
      e instanceof ObserveError && e.code === "invalid_argument" &&
      /PLOYZ_OBSERVE_MAX_BYTES="lots"/.test(e.message),
  );
  assert.equal(freeFloor({ maxBytes: 1 }, 10 * 2 ** 30), DEFAULT_MIN_FREE_BYTES);
  assert.equal(freeFloor({ maxBytes: 1 }, 100 * 2 ** 30), 5 * 2 ** 30);
  assert.equal(freeFloor({ maxBytes: 1, minFreeBytes: 7 }, 100 * 2 ** 30), 7);
  const space = diskSpace(Deno.cwd());
  assert.ok(space === undefined || (space.total > 0 && space.free <= space.total));
});
