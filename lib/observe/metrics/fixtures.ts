/**
 * Fixture trees for this folder's tests and benchmark: a Docker data root with `config.v2.json` files, cgroup v1
 * and v2 hierarchies, and a `/proc`, written under a temp directory in the kernel's formats.
 *
 * @module
 */

import { join } from "node:path";

/** A container's cgroup counters to write. */
export interface CgroupFixture {
  /** `cpuacct.usage` (v1) or `usage_usec` × 1000 (v2). */
  cpuNs: number;
  /** `memory.usage_in_bytes` / `memory.current`. */
  usage: number;
  /** `total_inactive_file` / `inactive_file`. */
  inactiveFile: number;
  /** Bytes read. */
  read: number;
  /** Bytes written. */
  write: number;
}

/** State fields of a fixture container. */
export interface StateFixture {
  /** Default true. */
  running?: boolean;
  /** Default 0. */
  pid?: number;
  /** Default 2026-01-01T00:00:00Z. */
  startedAt?: string;
  /** Default Docker's zero time. */
  finishedAt?: string;
  /** Default 0. */
  exitCode?: number;
  /** Default false. */
  oomKilled?: boolean;
  /** Health status; default none. */
  health?: string;
  /** Default 0. */
  restartCount?: number;
}

async function write(path: string, text: string): Promise<void> {
  await Deno.mkdir(join(path, ".."), { recursive: true });
  await Deno.writeTextFile(path, text);
}

/** Writes `<dockerRoot>/containers/<id>/config.v2.json` for a Ployz container. */
export async function writeConfig(
  dockerRoot: string,
  id: string,
  labels: Record<string, string>,
  state: StateFixture = {},
): Promise<void> {
  const config = {
    ID: id,
    Name: `/${id.slice(0, 8)}`,
    RestartCount: state.restartCount ?? 0,
    Config: { Labels: labels },
    State: {
      Running: state.running ?? true,
      Pid: state.pid ?? 0,
      StartedAt: state.startedAt ?? "2026-01-01T00:00:00Z",
      FinishedAt: state.finishedAt ?? "0001-01-01T00:00:00Z",
      ExitCode: state.exitCode ?? 0,
      OOMKilled: state.oomKilled ?? false,
      Health: state.health === undefined ? null : { Status: state.health },
    },
  };
  // Written beside and renamed, as Docker does, so a scan never reads half a file.
  const path = join(dockerRoot, "containers", id, "config.v2.json");
  await write(`${path}.tmp`, JSON.stringify(config));
  await Deno.rename(`${path}.tmp`, path);
}

/** Writes a cgroup v1 container cgroup at `<root>/<controller>/<path>/`. */
export async function writeCgroupV1(root: string, path: string, c: CgroupFixture): Promise<void> {
  await write(join(root, "cpuacct", path, "cpuacct.usage"), `${c.cpuNs}\n`);
  await write(join(root, "memory", path, "memory.usage_in_bytes"), `${c.usage}\n`);
  await write(
    join(root, "memory", path, "memory.stat"),
    `cache 4096\nrss 1000\ninactive_file ${c.inactiveFile}\ntotal_cache 4096\ntotal_inactive_file ${c.inactiveFile}\n`,
  );
  await write(
    join(root, "blkio", path, "blkio.throttle.io_service_bytes"),
    `8:0 Read ${c.read}\n8:0 Write ${c.write}\n8:0 Sync 0\n8:0 Async 0\n8:0 Total ${c.read + c.write}\n` +
      `Total ${c.read + c.write}\n`,
  );
}

/** Writes a cgroup v2 container cgroup at `<root>/<path>/`, and marks `<root>` as a v2 mount. */
export async function writeCgroupV2(root: string, path: string, c: CgroupFixture): Promise<void> {
  await write(join(root, "cgroup.controllers"), "cpuset cpu io memory pids\n");
  const usec = Math.floor(c.cpuNs / 1000);
  await write(join(root, path, "cpu.stat"), `usage_usec ${usec}\nuser_usec ${usec}\nsystem_usec 0\n`);
  await write(join(root, path, "memory.current"), `${c.usage}\n`);
  await write(join(root, path, "memory.stat"), `anon 1000\nfile 4096\ninactive_file ${c.inactiveFile}\n`);
  await write(
    join(root, path, "io.stat"),
    `8:0 rbytes=${c.read} wbytes=${c.write} rios=1 wios=1 dbytes=0 dios=0\n`,
  );
}

/** `net/dev` text with `lo` and `eth0`. */
export function netDev(rx: number, tx: number, extra: string[] = []): string {
  return [
    "Inter-|   Receive                                                |  Transmit",
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed",
    "    lo:  999999     100    0    0    0     0          0         0   999999     100    0    0    0     0       0          0",
    `  eth0: ${rx}      10    0    0    0     0          0         0 ${tx}      10    0    0    0     0       0          0`,
    ...extra,
    "",
  ].join("\n");
}

/** Writes `<proc>/<pid>/net/dev`. */
export async function writePidNet(proc: string, pid: number, rx: number, tx: number): Promise<void> {
  await write(join(proc, String(pid), "net", "dev"), netDev(rx, tx));
}

/** Writes the Machine's `/proc` files: two CPUs, with `busy` and `idle` ticks in total. */
export async function writeMachineProc(
  proc: string,
  m: {
    busy: number;
    idle: number;
    memTotalKb: number;
    memAvailableKb: number;
    rx: number;
    tx: number;
    load1: number;
  },
): Promise<void> {
  await write(
    join(proc, "stat"),
    `cpu  ${m.busy} 0 0 ${m.idle} 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0\nintr 1\n`,
  );
  await write(
    join(proc, "meminfo"),
    `MemTotal:       ${m.memTotalKb} kB\nMemFree:        1 kB\nMemAvailable:   ${m.memAvailableKb} kB\n`,
  );
  await write(
    join(proc, "net", "dev"),
    netDev(m.rx, m.tx, [
      "  veth1: 5000      10    0    0    0     0          0         0 5000      10    0    0    0     0       0          0",
    ]),
  );
  await write(join(proc, "loadavg"), `${m.load1} 0.50 0.25 1/100 4242\n`);
}

/** Labels of a Ployz container of `service` in Deployment `deployment`. */
export function labels(service: string, deployment = "dep-1"): Record<string, string> {
  return {
    "ployz.managed": "1",
    "ployz.machine": "machine-1",
    "ployz.project": "shop",
    "ployz.service": service,
    "ployz.deployment": deployment,
    "ployz.slot": "0",
  };
}

/** A 64-hex container id made from `n`. */
export function containerId(n: number): string {
  return n.toString(16).padStart(4, "0").repeat(16);
}

/** The Machine's `/proc` counters {@linkcode writeMachineProc} writes. */
export type MachineProcFixture = Parameters<typeof writeMachineProc>[1];

/** A container of a fixture tree: its labels and state, its cgroup v1 counters, and its network counters. */
export interface ContainerFixture {
  id: string;
  labels: Record<string, string>;
  state?: StateFixture;
  /** Written at `docker/<id>` in the cgroup v1 hierarchy; none when absent. */
  cgroup?: CgroupFixture;
  /** Written under `/proc/<pid>` (the state's PID); none when absent. */
  net?: { rx: number; tx: number };
}

/** Docker, cgroup v1 and `/proc` trees under `root` with `containers` and the Machine's `machine` counters. */
export async function writeTree(
  root: string,
  containers: ContainerFixture[],
  machine: MachineProcFixture,
): Promise<{ dockerRoot: string; cgroupRoot: string; procRoot: string }> {
  const tree = {
    dockerRoot: join(root, "docker"),
    cgroupRoot: join(root, "cgroup"),
    procRoot: join(root, "proc"),
  };
  for (const c of containers) {
    await writeConfig(tree.dockerRoot, c.id, c.labels, c.state);
    if (c.cgroup !== undefined) await writeCgroupV1(tree.cgroupRoot, `docker/${c.id}`, c.cgroup);
    if (c.net !== undefined) await writePidNet(tree.procRoot, c.state?.pid ?? 0, c.net.rx, c.net.tx);
  }
  await writeMachineProc(tree.procRoot, machine);
  return tree;
}
