/**
 * Host plumbing for the lab: detached processes, finding and stopping the processes it started (by pid, checked
 * against their command line), mounts under the lab directory.
 *
 * @module
 */

import { type CommandResult, hostRunner, runChecked } from "../mesh/mod.ts";
import { pollUntil } from "../util/mod.ts";

/** Runs a host command and throws with its stderr on failure. */
export function sh(cmd: string, args: string[]): Promise<string> {
  return runChecked(hostRunner(), cmd, args);
}

/** Runs a host command; never throws for a non-zero exit. */
export function tryRun(cmd: string, args: string[]): Promise<CommandResult> {
  return hostRunner().run(cmd, args);
}

/**
 * Starts `argv` detached in its own session, output appended to `logPath`, and returns once the starter exited.
 * The process outlives the caller; it is found again by pidfile or command line, never by a broad name.
 */
export async function spawnDetached(argv: string[], logPath: string): Promise<void> {
  const script = 'log=$1; shift; setsid "$@" >>"$log" 2>&1 </dev/null &';
  await sh("sh", ["-c", script, "sh", logPath, ...argv]);
}

/** The command line of a process, or `undefined` when it is gone. */
export function cmdlineOf(pid: number): string[] | undefined {
  try {
    const raw = Deno.readTextFileSync(`/proc/${pid}/cmdline`);
    return raw.split("\0").filter((s) => s !== "");
  } catch {
    return undefined;
  }
}

/** Whether a process exists (and is not a zombie). */
export function alive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** Every pid whose command line satisfies `match`. */
export function findPids(match: (argv: string[]) => boolean): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const argv = cmdlineOf(Number(entry.name));
    if (argv !== undefined && argv.length > 0 && match(argv)) pids.push(Number(entry.name));
  }
  return pids;
}

/** The pids of `roots` and all their descendants. */
export function withDescendants(roots: number[]): number[] {
  const children = new Map<number, number[]>();
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry.name));
      children.set(ppid, list);
    } catch {
      // gone meanwhile
    }
  }
  const out = new Set<number>();
  const queue = [...roots];
  while (queue.length > 0) {
    const pid = queue.pop()!;
    if (out.has(pid)) continue;
    out.add(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return [...out];
}

/** Sends `signal` to each pid and waits up to `timeoutMs` for all to exit; returns those still alive. */
export async function stopPids(pids: number[], signal: Deno.Signal, timeoutMs: number): Promise<number[]> {
  for (const pid of pids) {
    try {
      Deno.kill(pid, signal);
    } catch {
      // already gone
    }
  }
  let left = pids;
  await pollUntil(() => (left = left.filter(alive)).length === 0, { timeoutMs, intervalMs: 100 });
  return left;
}

/** Mount points at or under `dir`, deepest first. */
export function mountsUnder(dir: string): string[] {
  const text = Deno.readTextFileSync("/proc/self/mountinfo");
  const points = text.split("\n").filter((l) => l !== "").map((l) =>
    l.split(" ")[4].replace(/\\(\d{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)))
  );
  return points.filter((p) => p === dir || p.startsWith(dir + "/")).sort((a, b) => b.length - a.length);
}
