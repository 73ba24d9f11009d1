// Which attempt is in flight on this Machine, for the daemon's mutation interlock: a record without a terminal
// outcome whose worker is still alive. A record whose worker is gone is settled as `interrupted` on the way.
import { type AttemptRecord, isTerminal, listAttempts } from "./attempt.ts";
import type { InstallPaths } from "./paths.ts";
import type { SystemdDoor } from "./systemd.ts";
import { importOnFirstUse } from "../util/mod.ts";

/**
 * The attempt still running on this Machine (any path: local, SSH or RPC), if any; `door` defaults to systemd
 * reached directly. The daemon asks before every mutation, so the common answer (no unfinished record) reads the
 * attempt records only: the request path, which judges a worker alive, is loaded once a record is unfinished.
 */
export async function runningAttempt(
  paths: InstallPaths,
  door?: SystemdDoor,
): Promise<AttemptRecord | undefined> {
  for (const record of await listAttempts(paths)) {
    if (isTerminal(record)) continue;
    const { directSystemd, readAttempt } = await importOnFirstUse(
      "lib/installer/request.ts",
      () => import("./request.ts"),
    );
    const now = await readAttempt(paths, record.id, door ?? directSystemd(paths));
    if (!isTerminal(now)) return now;
  }
  return undefined;
}
