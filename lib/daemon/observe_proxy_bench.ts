// LogHistory over one hour of a busy Service (3 containers × 30 lines/s, plus another Service's output), newest
// 1000 lines: asked directly on observe.sock (baseline) against asked through Machine RPC, where the daemon's
// handler forwards to observe.sock and names the Machine on each line. Both servers run in this process on real
// unix sockets.
import { join } from "node:path";
import { openLogStore, serveObserveSocket } from "../observe/mod.ts";
import { connectMachine, createRpcApp, listenUnix } from "../rpc/mod.ts";
import { observeHandlers } from "./observe_proxy.ts";

const T0 = 1_767_225_600_000_000_000n;
const HOUR_S = 3600;
const PER_SECOND = 30;

const dir = Deno.makeTempDirSync({ prefix: "ployz-observe-proxy-bench-" });
const store = openLogStore({ path: join(dir, "observe.db") });
const keys = ["0", "1", "2"].map((slot) =>
  store.upsertContainer({
    containerId: slot.repeat(64),
    name: `web-${slot}`,
    machineId: "m",
    project: "shop",
    service: "web",
    deployment: "dep-1",
    slot,
  }).key
);
keys.push(
  store.upsertContainer({
    containerId: "9".repeat(64),
    name: "db",
    machineId: "m",
    project: "shop",
    service: "db",
    deployment: "dep-1",
    slot: "0",
  }).key,
);
const encoder = new TextEncoder();
for (let s = 0; s < HOUR_S; s += 60) {
  for (const key of keys) {
    const minute = Array.from({ length: 60 * PER_SECOND }, (_, i) => ({
      stream: "stdout" as const,
      timeNano: T0 + BigInt(s) * 1_000_000_000n + BigInt(i) * (1_000_000_000n / BigInt(PER_SECOND)),
      line: encoder.encode(`INFO request id=${s}-${i} path=/api/items/${i % 97} status=200`),
      partial: false,
      at: 0,
    }));
    store.append(key, {
      entries: minute,
      corruptBytes: 0,
      gap: false,
      cursor: { ino: 1, head: new Uint8Array(), offset: 0 },
    });
  }
}

const stopping = new AbortController();
const observeSocket = join(dir, "observe.sock");
const observe = await serveObserveSocket(store, observeSocket, stopping.signal);
const app = createRpcApp(observeHandlers({
  record: () => ({ id: "bench-machine", name: "bench", phase: "participating" }),
  observeSocket,
  stopping: stopping.signal,
}));
const daemon = await listenUnix({ path: join(dir, "ployz.sock") }, app.fetch);
const machine = connectMachine({ socketPath: join(dir, "ployz.sock") });
const direct = Deno.createHttpClient({ proxy: { transport: "unix", path: observeSocket } });
globalThis.addEventListener("unload", () => {
  machine.close();
  direct.close();
  Deno.removeSync(dir, { recursive: true });
});

const since = T0.toString();
const until = (T0 + BigInt(HOUR_S) * 1_000_000_000n).toString();

async function directly(): Promise<number> {
  const response = await fetch("http://127.0.0.1/observe/v1/log_history", {
    method: "POST",
    body: JSON.stringify({ project: "shop", service: "web", since, until, limit: 1000 }),
    client: direct,
  });
  return (await response.json()).lines.length;
}

async function throughDaemon(): Promise<number> {
  const answer = await machine.logHistory({
    selector: { project: "shop", service: "web" },
    since,
    until,
    limit: 1000,
  });
  return answer.lines.length;
}

for (const [name, ask] of [["direct", directly], ["daemon", throughDaemon]] as const) {
  const n = await ask();
  if (n !== 1000) throw new Error(`${name}: ${n} lines, expected 1000`);
}

Deno.bench({
  name: "observe.sock directly: busy Service, 1 h, newest 1000",
  group: "log history",
  baseline: true,
  async fn(): Promise<void> {
    await directly();
  },
});

Deno.bench({
  name: "Machine RPC ployz.observe.log_history.v1: busy Service, 1 h, newest 1000",
  group: "log history",
  async fn(): Promise<void> {
    await throughDaemon();
  },
});

const GREP = "id=3540-17 ";

Deno.bench({
  name: "observe.sock directly: busy Service, 1 h, grep a rare line",
  group: "log history grep",
  baseline: true,
  async fn(): Promise<void> {
    await fetch("http://127.0.0.1/observe/v1/log_history", {
      method: "POST",
      body: JSON.stringify({ project: "shop", service: "web", since, until, grep: GREP, limit: 1000 }),
      client: direct,
    }).then((r) => r.json());
  },
});

Deno.bench({
  name: "Machine RPC: busy Service, 1 h, grep a rare line",
  group: "log history grep",
  async fn(): Promise<void> {
    await machine.logHistory({
      selector: { project: "shop", service: "web" },
      since,
      until,
      grep: GREP,
      limit: 1000,
    });
  },
});

// Deno.bench runs before unload: stop the servers once the last bench is done.
globalThis.addEventListener("beforeunload", () => {
  stopping.abort();
  void daemon.shutdown();
  void observe.finished;
  store.close();
});
