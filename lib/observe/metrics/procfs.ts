/**
 * Parsers of the `/proc` files the sampler reads: `stat` (CPU time), `meminfo`, `loadavg`, and `net/dev` (the
 * Machine's own, or a container's through its init process). Each returns `undefined` for text it does not
 * recognise, which the sampler records as a named gap.
 *
 * @module
 */

/** Bytes received and sent, summed over interfaces. */
export interface NetCounters {
  /** Received bytes. */
  rx: number;
  /** Sent bytes. */
  tx: number;
}

/** CPU time from the first line of `/proc/stat`, in clock ticks. */
export interface CpuTimes {
  /** Ticks spent on anything but idle and iowait. */
  busy: number;
  /** All ticks. */
  total: number;
  /** CPUs listed (`cpuN` lines). */
  cpus: number;
}

// Host-side ends of container links and bridges: their bytes also cross a real interface, so they would count twice.
const VIRTUAL = /^(lo|veth.*|docker\d*|br-.*)$/;

/**
 * Sums `/proc/<pid>/net/dev` (or `/proc/net/dev`) over interfaces other than loopback; with `machine`, also leaves
 * out container links and bridges.
 */
export function parseNetDev(text: string, machine = false): NetCounters | undefined {
  const lines = text.split("\n");
  if (!lines[0]?.includes("Receive")) return undefined;
  let rx = 0;
  let tx = 0;
  for (const line of lines.slice(2)) {
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim();
    if (machine ? VIRTUAL.test(name) : name === "lo") continue;
    const fields = line.slice(colon + 1).trim().split(/\s+/);
    if (fields.length < 16) return undefined;
    const r = Number(fields[0]);
    const t = Number(fields[8]);
    if (!Number.isFinite(r) || !Number.isFinite(t)) return undefined;
    rx += r;
    tx += t;
  }
  return { rx, tx };
}

/** Reads the aggregate `cpu` line and counts the `cpuN` lines of `/proc/stat`. */
export function parseProcStat(text: string): CpuTimes | undefined {
  const lines = text.split("\n");
  const first = lines[0]?.split(/\s+/);
  if (first === undefined || first[0] !== "cpu" || first.length < 5) return undefined;
  // user nice system idle iowait irq softirq steal; guest time is already inside user.
  const ticks = first.slice(1, 9).map(Number);
  if (ticks.some((t) => !Number.isFinite(t))) return undefined;
  const total = ticks.reduce((a, b) => a + b, 0);
  const idle = ticks[3] + (ticks[4] ?? 0);
  const cpus = lines.filter((l) => /^cpu\d+\s/.test(l)).length;
  return cpus === 0 ? undefined : { busy: total - idle, total, cpus };
}

/** Memory in use from `/proc/meminfo`: `MemTotal − MemAvailable`, in bytes. */
export function parseMeminfo(text: string): number | undefined {
  const kb = (key: string): number | undefined => {
    const match = text.match(new RegExp(`^${key}:\\s+(\\d+) kB$`, "m"));
    return match === null ? undefined : Number(match[1]) * 1024;
  };
  const total = kb("MemTotal");
  const available = kb("MemAvailable");
  return total === undefined || available === undefined ? undefined : total - available;
}

/** The one-minute load average from `/proc/loadavg`. */
export function parseLoadavg(text: string): number | undefined {
  const first = Number(text.split(" ")[0]);
  return text.trim() === "" || !Number.isFinite(first) ? undefined : first;
}

/** CPU cores used between two `/proc/stat` readings. */
export function machineCores(previous: CpuTimes, current: CpuTimes): number | undefined {
  const total = current.total - previous.total;
  const busy = current.busy - previous.busy;
  if (total <= 0 || busy < 0) return undefined;
  return (busy / total) * current.cpus;
}
