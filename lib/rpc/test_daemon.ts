/**
 * The daemon side of the transport tests and benchmark: Machine "one" (id `m1`) answering DescribeContract for
 * the routes it is given, served on a real unix socket in a fresh directory, and this checkout's
 * `ployzd dial-stdio` bridging to it, as the SSH path runs it on the far side.
 *
 * @module
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { advertisedCapabilities, createRpcApp, type RpcHandlers } from "./app.ts";
import { listenUnix } from "./listen.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** A daemon serving `handlers` and DescribeContract on `<dir>/ployz.sock`. */
export interface TestDaemon extends AsyncDisposable {
  /** Its run directory (`PLOYZ_RUN_DIR` of a bridge to it). */
  dir: string;
  /** Its socket. */
  socket: string;
}

/**
 * Serves `handlers` on a fresh socket, with a DescribeContract advertising exactly them unless `handlers` brings
 * its own; disposing removes it all.
 */
export async function startTestDaemon(handlers: RpcHandlers): Promise<TestDaemon> {
  const dir = await Deno.makeTempDir({ prefix: "ployz-rpc-" });
  const socket = join(dir, "ployz.sock");
  const all: RpcHandlers = {
    describeContract: () =>
      Promise.resolve({
        "machine_id": "m1",
        "machine_name": "one",
        "protocol_major": 1,
        "daemon_version": "0.1.0",
        capabilities: advertisedCapabilities(all),
      }),
    ...handlers,
  };
  const app = createRpcApp(all);
  const server = await listenUnix({ path: socket }, (request, signal) => app.fetch(request, signal));
  return {
    dir,
    socket,
    async [Symbol.asyncDispose](): Promise<void> {
      await server.shutdown();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** The command line of this checkout's `ployzd dial-stdio` (with `flags`) bridging to the daemon in `dir`. */
export function dialStdio(
  dir: string,
  ...flags: string[]
): { cmd: string; args: string[]; env: Record<string, string> } {
  return {
    cmd: Deno.execPath(),
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      "--allow-read",
      "--allow-write",
      "--allow-net",
      "--allow-env",
      join(ROOT, "cmd", "ployzd.ts"),
      "dial-stdio",
      ...flags,
    ],
    env: { PLOYZ_RUN_DIR: dir },
  };
}

/** Spawns {@link dialStdio} with piped stdin, stdout and stderr. */
export function spawnDialStdio(dir: string, ...flags: string[]): Deno.ChildProcess {
  const bridge = dialStdio(dir, ...flags);
  return new Deno.Command(bridge.cmd, {
    args: bridge.args,
    env: bridge.env,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}
