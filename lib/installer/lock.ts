// The Machine-local install lock: `<runDir>/install.lock`, an flock every path that applies takes (the local
// command, an SSH session, the RPC-started worker). The holder writes its attempt id into the file, so a refused
// caller can name it.
import { dirname } from "node:path";
import { InstallError } from "./errors.ts";
import { type InstallPaths, lockPath } from "./paths.ts";
import { pollUntil } from "../util/mod.ts";

/** A held install lock. */
export interface InstallLock extends AsyncDisposable {
  /** The attempt the lock was taken for. */
  readonly attemptId: string;
  /** Releases the lock. */
  release(): Promise<void>;
}

/** Takes the lock now for `attemptId`, or refuses `busy` naming the holder's attempt. */
export async function tryLockInstall(paths: InstallPaths, attemptId: string): Promise<InstallLock> {
  const lock = await tryLockOnce(paths, attemptId);
  if (lock !== undefined) return lock;
  const holder = await lockHolder(paths);
  throw new InstallError(
    "busy",
    `Cannot start install attempt: attempt "${holder ?? "unknown"}" holds the install lock on this Machine`,
    { attempt_id: holder ?? null },
  );
}

/** Waits up to `timeoutMs` for the lock, polling; refuses `busy` naming the holder when time runs out. */
export async function waitLockInstall(
  paths: InstallPaths,
  attemptId: string,
  timeoutMs: number,
): Promise<InstallLock> {
  const lock = await pollUntil(() => tryLockOnce(paths, attemptId), { timeoutMs, intervalMs: 200 });
  return lock ?? await tryLockInstall(paths, attemptId);
}

/** The attempt id the current holder wrote, if any. */
export async function lockHolder(paths: InstallPaths): Promise<string | undefined> {
  try {
    const text = (await Deno.readTextFile(lockPath(paths))).trim();
    return (JSON.parse(text) as { attempt_id?: string }).attempt_id;
  } catch {
    return undefined;
  }
}

/** Whether someone holds the lock right now (a probe: takes and releases it when free). */
export async function lockIsHeld(paths: InstallPaths): Promise<boolean> {
  const file = await openLockFile(paths);
  try {
    const got = await file.tryLock(true);
    if (got) await file.unlock();
    return !got;
  } finally {
    file.close();
  }
}

async function openLockFile(paths: InstallPaths): Promise<Deno.FsFile> {
  await Deno.mkdir(dirname(lockPath(paths)), { recursive: true, mode: 0o755 });
  return await Deno.open(lockPath(paths), { read: true, write: true, create: true, mode: 0o600 });
}

async function tryLockOnce(paths: InstallPaths, attemptId: string): Promise<InstallLock | undefined> {
  const file = await openLockFile(paths);
  try {
    if (!(await file.tryLock(true))) {
      file.close();
      return undefined;
    }
    // Same inode as the lock: the holder note is written in place, never by rename.
    await file.truncate(0);
    await file.seek(0, Deno.SeekMode.Start);
    const note = JSON.stringify({ "attempt_id": attemptId, pid: Deno.pid, since: new Date().toISOString() });
    await file.write(new TextEncoder().encode(note + "\n"));
  } catch (error) {
    file.close();
    throw error;
  }
  let released = false;
  async function release(): Promise<void> {
    if (released) return;
    released = true;
    try {
      await file.truncate(0);
      await file.unlock();
    } finally {
      file.close();
    }
  }
  return { attemptId, release, [Symbol.asyncDispose]: release };
}
