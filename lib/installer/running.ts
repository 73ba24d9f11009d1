// Which attempt is in flight on this Machine, for the daemon's mutation interlock: a record without a terminal
// outcome whose worker is still alive. A record whose worker is gone is settled as `interrupted` on the way.
import { type AttemptRecord, isTerminal, listAttempts } from "./attempt.ts";
import type { InstallPaths } from "./paths.ts";
import { directSystemd, readAttempt } from "./request.ts";
import type { SystemdDoor } from "./systemd.ts";

/** The attempt still running on this Machine (any path: local, SSH or RPC), if any. */
export async function runningAttempt(
  paths: InstallPaths,
  door: SystemdDoor = directSystemd(paths),
): Promise<AttemptRecord | undefined> {
  for (const record of await listAttempts(paths)) {
    if (isTerminal(record)) continue;
    const now = await readAttempt(paths, record.id, door);
    if (!isTerminal(now)) return now;
  }
  return undefined;
}
