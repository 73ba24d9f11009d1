// LogHistory over one hour of a busy Service (3 containers × 30 lines/s, plus another Service's output), newest
// 1000 lines: asked directly on observe.sock (baseline) against asked through Machine RPC, where the daemon's
// handler forwards to observe.sock and names the Machine on each line. Both servers run in this process on real
// unix sockets.
import { join } from "node:path";
import { openLogStore, serveObserveSocket } from "../observe/mod.ts";
import { busyHour } from "../observe/testing/mod.ts";
import { connectMachine, createRpcApp, listenUnix } from "../rpc/mod.ts";
import { observeHandlers } from "./observe_proxy.ts";

const dir = Deno.makeTempDirSync({ prefix: "ployz-observe-proxy-bench-" });
const store = openLogStore({ path: join(dir, "observe.db") });
const hour = busyHour(store);

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

const since = hour.since.toString();
const until = hour.until.toString();

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
