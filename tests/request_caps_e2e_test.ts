// Request bodies under a byte cap, against the real `ployzd serve`: a 100 MB chunked body (no Content-Length) sent
// to Machine RPC and to the Entry Machine's forwarder over the daemon's unix socket is refused once the cap is
// passed, without the daemon reading, let alone buffering, the rest; its resident memory stays flat.
import { equal, ok } from "node:assert/strict";
import { join } from "node:path";
import { MAX_REQUEST_BYTES } from "../lib/rpc/mod.ts";
import { streamedBody } from "../lib/util/testing/mod.ts";
import { machineEnv, startServe } from "./support/daemon.ts";
import { DOCKER_SOCKET } from "./support/docker.ts";
import { needs } from "./support/needs.ts";

const BODY_BYTES = 100 * 1024 * 1024;

function rssKiB(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
}

/** Posts a chunked body of BODY_BYTES; answers the status, the error code, the bytes pulled and the time taken. */
async function postChunked(
  socketPath: string,
  path: string,
): Promise<{ status: number; code: string; pulled: number; ms: number }> {
  const { body, pulled } = streamedBody(64 * 1024, BODY_BYTES);
  using client = Deno.createHttpClient({ proxy: { transport: "unix", path: socketPath } });
  const started = performance.now();
  const response = await fetch(`http://localhost${path}`, {
    method: "POST",
    body,
    client,
    headers: { "content-type": "application/json" },
  });
  const answer = await response.json() as { error?: { code?: string } };
  return {
    status: response.status,
    code: answer.error?.code ?? "",
    pulled: pulled(),
    ms: performance.now() - started,
  };
}

Deno.test(needs(["docker"], {
  name: "ployzd serve refuses a 100 MB chunked request body before buffering it, RPC and forwarder alike",
  async fn(t) {
    const root = await Deno.makeTempDir({ prefix: "ployz-caps-" });
    const run = crypto.randomUUID().slice(0, 8);
    try {
      const env = await machineEnv(root, {
        dockerSocket: DOCKER_SOCKET,
        dockerRoot: join(root, "docker"),
        network: `ployz-caps-${run}`,
        run,
      });
      await using serving = await startServe(env);
      const socketPath = join(env.layout.runDir, "ployz.sock");
      const pid = serving.child.pid;
      const before = rssKiB(pid);
      const limitKiB = 48 * 1024;
      for (
        const path of [
          "/rpc/ployz.machine.status.v1",
          "/rpc/via/aaaaaaaaaaaaaaaaaaaaaaaaaa/ployz.machine.status.v1",
        ]
      ) {
        await t.step(`${path}: refused at the cap`, async () => {
          const answer = await postChunked(socketPath, path);
          const grown = rssKiB(pid) - before;
          console.log(
            `${path}: ${answer.status} ${answer.code} after ${Math.round(answer.ms)} ms, ` +
              `${(answer.pulled / 1048576).toFixed(1)} MB sent, RSS ${before} KiB -> +${grown} KiB`,
          );
          equal(answer.status, 400);
          equal(answer.code, "invalid_argument");
          ok(
            answer.pulled < BODY_BYTES / 4,
            `the daemon read ${answer.pulled} bytes of a ${BODY_BYTES}-byte body`,
          );
          ok(answer.pulled > MAX_REQUEST_BYTES, "the cap, not an early close, refused it");
          ok(grown < limitKiB, `RSS grew by ${grown} KiB`);
        });
      }
    } finally {
      await Deno.remove(root, { recursive: true }).catch(() => {});
    }
  },
}));
