// Readiness: the new daemon answers DescribeContract on its socket with exactly the target version. A started
// process or an accepted connection alone is not readiness.
import { connectMachine, type ConnectOptions } from "../rpc/mod.ts";
import type { ReadyEvidence } from "./attempt.ts";
import { InstallError } from "./errors.ts";
import { messageOf, pollUntil } from "../util/mod.ts";

/** Polls `socketPath` until the daemon reports `version`, or refuses `unavailable` after `timeoutMs`. */
export async function waitReady(
  socketPath: string,
  version: string,
  timeoutMs: number,
): Promise<ReadyEvidence> {
  let last = "no answer yet";
  const ready = await pollUntil(async (): Promise<ReadyEvidence | undefined> => {
    using client = connectMachine(overSocket(socketPath));
    try {
      const contract = await client.describeContract({ signal: AbortSignal.timeout(3_000) });
      if (contract.daemon_version === version) {
        return {
          "daemon_version": contract.daemon_version,
          "machine_id": contract.machine_id,
          via: "describe_contract",
          "observed_at": new Date().toISOString(),
        };
      }
      last = `it reports version "${contract.daemon_version}"`;
    } catch (error) {
      last = messageOf(error);
    }
    return undefined;
  }, { timeoutMs });
  if (ready !== undefined) return ready;
  throw new InstallError(
    "unavailable",
    `The daemon did not answer as version "${version}" on "${socketPath}" within ${
      timeoutMs / 1000
    } s: ${last}`,
  );
}

/**
 * The daemon's socket as a transport whose requests name the host `ployz`, never `localhost`: Deno checks a
 * fetch's URL host even when the client goes over a unix socket, and a `localhost:80` grant would also reach the
 * Machine's ingress on its loopback.
 */
function overSocket(socketPath: string): ConnectOptions {
  const http = Deno.createHttpClient({ proxy: { transport: "unix", path: socketPath } });
  return {
    label: socketPath,
    fetch: async (request) => {
      const url = new URL(request.url);
      return await fetch(`http://ployz${url.pathname}${url.search}`, {
        method: request.method,
        headers: request.headers,
        body: request.body === null ? undefined : await request.arrayBuffer(),
        signal: request.signal,
        client: http,
      });
    },
    onClose: () => http.close(),
  };
}
