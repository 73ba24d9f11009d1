// What the operator's transport costs per call, without SSH's own share: DescribeContract on the daemon's socket
// (baseline) against the same call over one `ployzd dial-stdio --mux` process (how a command rides one SSH
// connection) and over a fresh `ployzd dial-stdio` per call (one SSH session per call, as a ControlMaster would
// reuse the TCP connection but still start the bridge each time). The server runs in this process on a real unix
// socket; the bridges are this checkout's ployzd.
import { join } from "node:path";
import { connectMachine } from "./client.ts";
import { muxSession } from "./mux.ts";
import { muxFetch, stdioFetch } from "./stdio_transport.ts";
import { dialStdio, startTestDaemon } from "./test_daemon.ts";

const daemon = await startTestDaemon({});
const dir = daemon.dir;
const bridge = dialStdio(dir);
const child = new Deno.Command(bridge.cmd, {
  args: [...bridge.args, "--mux"],
  env: bridge.env,
  stdin: "piped",
  stdout: "piped",
  stderr: "null",
}).spawn();
const session = muxSession(child.stdout, child.stdin);
const socket = connectMachine({ socketPath: join(dir, "ployz.sock") });
const mux = connectMachine({ fetch: muxFetch(session, "mux") });
const perCall = connectMachine({ fetch: stdioFetch(bridge) });
await socket.describeContract();
await mux.describeContract();
globalThis.addEventListener("unload", () => {
  socket.close();
  mux.close();
  perCall.close();
  void session.close();
  // unload does not wait for promises: the socket goes with the process, its directory now.
  Deno.removeSync(dir, { recursive: true });
});

Deno.bench({
  name: "DescribeContract on the daemon's socket",
  group: "operator transport",
  baseline: true,
  async fn(): Promise<void> {
    await socket.describeContract();
  },
});

Deno.bench({
  name: "DescribeContract over one dial-stdio --mux bridge",
  group: "operator transport",
  async fn(): Promise<void> {
    await mux.describeContract();
  },
});

Deno.bench({
  name: "DescribeContract over a fresh dial-stdio bridge per call",
  group: "operator transport",
  n: 10,
  async fn(): Promise<void> {
    await perCall.describeContract();
  },
});
