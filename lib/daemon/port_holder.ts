/**
 * Explaining a container start Docker refused because a host port it publishes is taken (an Ingress Proxy's 80 or
 * 443 held by another web server, most often): which port, and which process holds it, found the way `ss -p` does
 * (the listening socket's inode in `/proc/net/tcp*` of this network namespace, then the process whose file
 * descriptors name it). Bounded: a fixed number of processes and descriptors is read, and a lookup that cannot see
 * the holder says so instead of failing.
 *
 * @module
 */

/** A host port Docker could not publish, read from its error message. */
export interface PortConflict {
  /** The address Docker tried to bind, as it wrote it (`0.0.0.0`, `::`, an IP). */
  address: string;
  /** The port. */
  port: number;
  /** `process`: a process listens on it; `container`: another container already publishes it. */
  by: "process" | "container";
}

/** The port conflict a Docker start error describes, or null for any other error. Pure. */
export function portConflictOf(message: string): PortConflict | null {
  const inUse = /listen (?:tcp|udp)[46]? (\[[^\]]*\]|[^\s]*):(\d{1,5}): bind: address already in use/
    .exec(message);
  if (inUse !== null) return { address: inUse[1], port: Number(inUse[2]), by: "process" };
  const allocated = /Bind for (\[[^\]]*\]|[^\s]*):(\d{1,5}) failed: port is already allocated/.exec(message);
  if (allocated !== null) return { address: allocated[1], port: Number(allocated[2]), by: "container" };
  return null;
}

/** Inodes of sockets listening on `port` in a `/proc/net/tcp` or `/proc/net/tcp6` table. Pure. */
export function listeningInodes(table: string, port: number): string[] {
  const out: string[] = [];
  for (const line of table.split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
    if (f.length < 10 || f[3] !== "0A") continue;
    const local = f[1].split(":");
    if (parseInt(local[local.length - 1], 16) === port && f[9] !== "0") out.push(f[9]);
  }
  return out;
}

/** A process holding a port. */
export interface PortHolder {
  /** Its process id. */
  pid: number;
  /** Its command name (`/proc/<pid>/comm`). */
  command: string;
}

const MAX_PROCESSES = 4096;
const MAX_DESCRIPTORS = 4096;

/**
 * Where this daemon can read the host's /proc: Deno refuses narrow reads of /proc itself, so a read-only bind of it
 * under the run dir (`PLOYZ_OBSERVE_PROC_ROOT`, as the observe unit and `ployz lab` provide) is used when given.
 */
export function hostProcRoot(env: (name: string) => string | undefined = (n) => Deno.env.get(n)): string {
  return env("PLOYZ_OBSERVE_PROC_ROOT")?.trim() || "/proc";
}

/** The process listening on TCP `port` in this network namespace, or undefined when none is visible. */
export async function findPortHolder(port: number, procRoot = "/proc"): Promise<PortHolder | undefined> {
  const inodes = new Set<string>();
  for (const table of ["net/tcp", "net/tcp6"]) {
    try {
      for (const inode of listeningInodes(await Deno.readTextFile(`${procRoot}/${table}`), port)) {
        inodes.add(`socket:[${inode}]`);
      }
    } catch { /* no IPv6, or not Linux */ }
  }
  if (inodes.size === 0) return undefined;
  let processes = 0;
  try {
    for await (const entry of Deno.readDir(procRoot)) {
      if (!/^\d+$/.test(entry.name)) continue;
      if (++processes > MAX_PROCESSES) break;
      const pid = Number(entry.name);
      try {
        let descriptors = 0;
        for await (const fd of Deno.readDir(`${procRoot}/${pid}/fd`)) {
          if (++descriptors > MAX_DESCRIPTORS) break;
          const target = await Deno.readLink(`${procRoot}/${pid}/fd/${fd.name}`).catch(() => "");
          if (inodes.has(target)) {
            const command = (await Deno.readTextFile(`${procRoot}/${pid}/comm`).catch(() => "")).trim();
            return { pid, command: command || "unknown" };
          }
        }
      } catch { /* gone, or not ours to read */ }
    }
  } catch { /* no /proc */ }
  return undefined;
}

/** The one-line reason a start failed on a taken port, naming the Machine, the port and the holder. */
export function portConflictMessage(
  conflict: PortConflict,
  machineName: string,
  holder: PortHolder | undefined,
): string {
  const who = conflict.by === "container"
    ? "another container publishes it"
    : holder === undefined
    ? "a process this daemon cannot identify holds it"
    : `${holder.command} (pid ${holder.pid}) holds it`;
  return `Port ${conflict.port} on Machine "${machineName}" is already in use: ${who}; ` +
    "free the port, then start the container again";
}
