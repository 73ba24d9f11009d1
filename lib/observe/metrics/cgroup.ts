/**
 * Reads a container's CPU, memory and block I/O counters from its cgroup, on cgroup v1 (one hierarchy per
 * controller) and v2 (one unified hierarchy). Synchronous on purpose: these are kernel pseudo-files that never
 * wait on a disk, and a round of them is cheaper without a promise per file.
 *
 * Where a container's cgroup lives depends on Docker's cgroup driver: `docker/<id>` (cgroupfs) or
 * `system.slice/docker-<id>.scope` (systemd). Anything else (a custom `--cgroup-parent`) is found through the
 * container's init process, `/proc/<pid>/cgroup`.
 *
 * @module
 */

import { join } from "node:path";
import { gap, type Reading, readRefused } from "./gaps.ts";

/** The counters of one container's cgroup. Each is a number or a named gap. */
export interface CgroupCounters {
  /** CPU time used since the cgroup was created, in ns. */
  cpuNs: Reading;
  /** Memory in use, without the page cache the kernel can drop (inactive files), in bytes. */
  memoryBytes: Reading;
  /** Bytes read from block devices since the cgroup was created. */
  ioReadBytes: Reading;
  /** Bytes written to block devices since the cgroup was created. */
  ioWriteBytes: Reading;
}

/** Where the cgroup and proc file systems are mounted; tests point these at fixture trees. */
export interface CgroupRoots {
  /** Default `/sys/fs/cgroup`. */
  cgroupRoot?: string;
  /** Default `/proc`. */
  procRoot?: string;
}

interface Located {
  pid: number;
  /** The cgroup path below each hierarchy's mount, e.g. `docker/<id>`. */
  path: string;
}

const V1_CPU_DIRS = ["cpuacct", "cpu,cpuacct", "cpuacct,cpu"];

/** Reads containers' cgroup counters; remembers where each container's cgroup is. */
export class CgroupReader {
  /** 1 or 2, detected once from the mount. */
  readonly version: 1 | 2;
  readonly #root: string;
  readonly #proc: string;
  readonly #cpuDir: string;
  readonly #located = new Map<string, Located>();
  readonly #refused: boolean;

  /** Detects the cgroup version under `roots.cgroupRoot`. */
  constructor(roots: CgroupRoots = {}) {
    this.#root = roots.cgroupRoot ?? "/sys/fs/cgroup";
    this.#proc = roots.procRoot ?? "/proc";
    this.#refused = readRefused(this.#root);
    this.version = exists(join(this.#root, "cgroup.controllers")) ? 2 : 1;
    this.#cpuDir = V1_CPU_DIRS.find((d) => exists(join(this.#root, d))) ?? "cpuacct";
  }

  /** Reads the counters of running container `id` whose init process is `pid` (0 when unknown). */
  read(id: string, pid: number): CgroupCounters {
    const path = this.#refused ? undefined : this.#locate(id, pid);
    if (path === undefined) {
      const missing = gap(this.#refused ? "not_permitted" : "cgroup_not_found");
      return { cpuNs: missing, memoryBytes: missing, ioReadBytes: missing, ioWriteBytes: missing };
    }
    const counters = this.version === 2 ? this.#readV2(path) : this.#readV1(path);
    // A cgroup that vanished under us (the container stopped): look again next time.
    if (typeof counters.cpuNs !== "number" && typeof counters.memoryBytes !== "number") {
      this.#located.delete(id);
    }
    return counters;
  }

  /** Whether this process may not read the cgroup mount at all. */
  get refused(): boolean {
    return this.#refused;
  }

  /** Forgets what it knows of containers not in `present`. */
  retain(present: Set<string>): void {
    for (const id of this.#located.keys()) if (!present.has(id)) this.#located.delete(id);
  }

  #locate(id: string, pid: number): string | undefined {
    const known = this.#located.get(id);
    if (known !== undefined && known.pid === pid) return known.path;
    const probe = this.version === 2 ? this.#root : join(this.#root, "memory");
    let path = [`docker/${id}`, `system.slice/docker-${id}.scope`].find((p) => exists(join(probe, p)));
    if (path === undefined && pid > 0) path = this.#fromProc(pid);
    if (path === undefined) return undefined;
    this.#located.set(id, { pid, path });
    return path;
  }

  #fromProc(pid: number): string | undefined {
    const text = readText(join(this.#proc, String(pid), "cgroup"));
    if (text === undefined) return undefined;
    for (const line of text.split("\n")) {
      const [, controllers, path] = line.split(":", 3);
      if (path === undefined) continue;
      const wanted = this.version === 2 ? controllers === "" : controllers.split(",").includes("memory");
      if (wanted) return path.replace(/^\/+/, "");
    }
    return undefined;
  }

  #readV1(path: string): CgroupCounters {
    const cpuNs = parseInteger(readText(join(this.#root, this.#cpuDir, path, "cpuacct.usage")));
    const memDir = join(this.#root, "memory", path);
    const usage = parseInteger(readText(join(memDir, "memory.usage_in_bytes")));
    const stat = parseKeyed(readText(join(memDir, "memory.stat")));
    const inactive = stat?.get("total_inactive_file") ?? stat?.get("inactive_file");
    const io = parseBlkioV1(readText(join(this.#root, "blkio", path, "blkio.throttle.io_service_bytes")));
    return {
      cpuNs: cpuNs ?? gap("cgroup_file_unreadable"),
      memoryBytes: usage !== undefined && inactive !== undefined
        ? Math.max(0, usage - inactive)
        : gap("cgroup_file_unreadable"),
      ioReadBytes: io?.read ?? gap("cgroup_file_unreadable"),
      ioWriteBytes: io?.write ?? gap("cgroup_file_unreadable"),
    };
  }

  #readV2(path: string): CgroupCounters {
    const dir = join(this.#root, path);
    const usec = parseKeyed(readText(join(dir, "cpu.stat")))?.get("usage_usec");
    const current = parseInteger(readText(join(dir, "memory.current")));
    const inactive = parseKeyed(readText(join(dir, "memory.stat")))?.get("inactive_file");
    const io = parseIoStatV2(readText(join(dir, "io.stat")));
    return {
      cpuNs: usec === undefined ? gap("cgroup_file_unreadable") : usec * 1000,
      memoryBytes: current !== undefined && inactive !== undefined
        ? Math.max(0, current - inactive)
        : gap("cgroup_file_unreadable"),
      ioReadBytes: io?.read ?? gap("cgroup_file_unreadable"),
      ioWriteBytes: io?.write ?? gap("cgroup_file_unreadable"),
    };
  }
}

/** A whole file's text, or `undefined` when it cannot be read. */
export function readText(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return undefined;
  }
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

function parseInteger(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  return /^\d+$/.test(trimmed) ? Number(trimmed) : undefined;
}

/** `key value` lines (memory.stat, cpu.stat); `undefined` when unreadable or a line is malformed. */
function parseKeyed(text: string | undefined): Map<string, number> | undefined {
  if (text === undefined) return undefined;
  const values = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const [key, value] = line.split(" ");
    if (value === undefined || !/^\d+$/.test(value)) return undefined;
    values.set(key, Number(value));
  }
  return values;
}

/** `MAJ:MIN Read N` / `MAJ:MIN Write N` lines, summed over devices; a file with only `Total` is all zero. */
function parseBlkioV1(text: string | undefined): { read: number; write: number } | undefined {
  if (text === undefined) return undefined;
  let read = 0;
  let write = 0;
  for (const line of text.split("\n")) {
    const parts = line.trim().split(/\s+/);
    if (parts.length !== 3) continue;
    const n = Number(parts[2]);
    if (!Number.isFinite(n)) return undefined;
    if (parts[1] === "Read") read += n;
    else if (parts[1] === "Write") write += n;
  }
  return { read, write };
}

/** `MAJ:MIN rbytes=N wbytes=N …` lines, summed over devices; an empty file is all zero. */
function parseIoStatV2(text: string | undefined): { read: number; write: number } | undefined {
  if (text === undefined) return undefined;
  let read = 0;
  let write = 0;
  for (const line of text.split("\n")) {
    for (const field of line.trim().split(/\s+/).slice(1)) {
      const [key, value] = field.split("=");
      if (key === "rbytes") read += Number(value);
      else if (key === "wbytes") write += Number(value);
    }
  }
  return Number.isFinite(read) && Number.isFinite(write) ? { read, write } : undefined;
}
