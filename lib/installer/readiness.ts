// Readiness: the new daemon answers DescribeContract on its socket with exactly the target version. A started
// process or an accepted connection alone is not readiness.
import { connectMachine } from "../rpc/mod.ts";
import type { ReadyEvidence } from "./attempt.ts";
import { InstallError } from "./errors.ts";
import { pollUntil } from "../util/mod.ts";

/** Polls `socketPath` until the daemon reports `version`, or refuses `unavailable` after `timeoutMs`. */
export async function waitReady(
  socketPath: string,
  version: string,
  timeoutMs: number,
): Promise<ReadyEvidence> {
  let last = "no answer yet";
  const ready = await pollUntil(async (): Promise<ReadyEvidence | undefined> => {
    using client = connectMachine({ socketPath });
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
      last = error instanceof Error ? error.message : String(error);
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
