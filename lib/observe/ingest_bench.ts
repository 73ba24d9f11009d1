// Log ingest rate and LogHistory latency. Ingest: reading + decoding frames alone (baseline) against reading,
// decoding and storing them; prints the bytes stored per line once. History: LogHistory over one hour of a busy
// Service (3 containers × 30 lines/s, plus another Service's output), against one container's window.
import { join } from "node:path";
import { Ingester } from "./ingester.ts";
import { readLogBatches } from "./log_reader.ts";
import { type LogStore, openLogStore } from "./log_store.ts";
import { append, busyHour, frames, makeContainer, ployzLabels, T0 } from "./test_support.ts";
import type { LogEntryInput } from "./log_entry.ts";

const LINES = 20_000;
const dir = Deno.makeTempDirSync({ prefix: "ployz-observe-bench-" });
globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));

const dockerRoot = join(dir, "docker");
const logDir = await makeContainer(dockerRoot, "e".repeat(64), ployzLabels("bench"));
const entries: LogEntryInput[] = Array.from({ length: LINES }, (_, i) => ({
  stream: i % 5 === 0 ? "stderr" : "stdout",
  timeNano: T0 + BigInt(i) * 1_000_000n,
  line: `2026-01-01T00:00:00Z INFO request id=${i} path=/api/items/${i % 97} status=200 duration_ms=${
    i % 31
  }`,
}));
await append(join(logDir, "container.log"), frames(entries));

let run = 0;
async function ingestOnce(): Promise<LogStore> {
  const store = openLogStore({ path: join(dir, `ingest-${++run}.db`) });
  const ingester = new Ingester(store, { dockerRoot });
  await ingester.scan();
  const report = await ingester.poll();
  if (report.lines !== LINES) throw new Error(`Ingested ${report.lines} lines, expected ${LINES}`);
  return store;
}

{
  const store = await ingestOnce();
  const perLine = store.usedBytes() / LINES;
  const textBytes = entries.reduce((n, e) => n + String(e.line).length, 0) / LINES;
  console.log(`bytes stored per line: ${perLine.toFixed(1)} (text ${textBytes.toFixed(1)})`);
  store.close();
}

Deno.bench({
  name: `read + decode ${LINES} frames`,
  group: "ingest",
  baseline: true,
  async fn(): Promise<void> {
    let n = 0;
    for await (const batch of readLogBatches(logDir, undefined)) n += batch.entries.length;
    if (n !== LINES) throw new Error(`Read ${n} lines`);
  },
});

Deno.bench({
  name: `read + decode + store ${LINES} lines`,
  group: "ingest",
  async fn(): Promise<void> {
    (await ingestOnce()).close();
  },
});

// One hour of a busy Service.
const history = openLogStore({ path: join(dir, "history.db") });
globalThis.addEventListener("unload", () => history.close());
const { since, until } = busyHour(history);

Deno.bench({
  name: "one container, 1 h, newest 1000",
  group: "history",
  baseline: true,
  fn(): void {
    history.logHistory({ container: "0".repeat(12), since, until, limit: 1000 });
  },
});

Deno.bench({
  name: "busy Service (3 containers), 1 h, newest 1000",
  group: "history",
  fn(): void {
    history.logHistory({ project: "shop", service: "web", since, until, limit: 1000 });
  },
});

Deno.bench({
  name: "busy Service, 1 h, grep a rare status",
  group: "history",
  fn(): void {
    history.logHistory({ project: "shop", service: "web", since, until, grep: "status=500", limit: 1000 });
  },
});
