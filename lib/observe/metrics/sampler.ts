/**
 * The sampler: one round reads, for each of this Machine's Ployz containers, CPU, memory and block I/O from its
 * cgroup, network bytes from its init process's `/proc/<pid>/net/dev`, and its restart count and state from
 * `config.v2.json`; and for the Machine itself `/proc/stat`, `/proc/meminfo`, `/proc/net/dev` and
 * `/proc/loadavg`. File reads only, no Docker API, nothing that can block. Rates and deltas are taken against
 * the previous round; a value it cannot read or compute is a named gap.
 *
 * @module
 */

import { join } from "node:path";
import type { ContainerIdentity } from "../containers.ts";
import { CgroupReader, readText } from "./cgroup.ts";
import { type ContainerState, type Marker, markersBetween, StateScanner } from "./container_state.ts";
import { gap, type GapReason, isGap, type Reading, readRefused } from "./gaps.ts";
import { CONTAINER_METRICS, type Values } from "./metric_names.ts";
import {
  type CpuTimes,
  machineCores,
  parseLoadavg,
  parseMeminfo,
  parseNetDev,
  parseProcStat,
} from "./procfs.ts";

/** Options of {@link Sampler}. */
export interface SamplerOptions {
  /** Docker's data root; containers live in its `containers/`. */
  dockerRoot: string;
  /** Default `/sys/fs/cgroup`. */
  cgroupRoot?: string;
  /** Default `/proc`. */
  procRoot?: string;
  /** Values of slow sources to add to the Machine's sample (see {@link SlowTick}). */
  slow?: () => Values;
}

/** One container's sample of a round. */
export interface ContainerSample {
  /** Who. */
  identity: ContainerIdentity;
  /** The values. */
  values: Values;
  /** State changes seen since the previous round. */
  markers: Marker[];
  /** The container disappeared since the previous round; it is not sampled again. */
  gone: boolean;
}

/** What one round read. */
export interface SampleRound {
  /** The round's time, ms since the epoch. */
  timeMs: number;
  /** One sample per known container. */
  containers: ContainerSample[];
  /** The Machine's own values. */
  machine: Values;
}

interface Previous {
  state: ContainerState;
  timeMs: number;
  cpuNs?: number;
  ioRead?: number;
  ioWrite?: number;
  rx?: number;
  tx?: number;
}

/** Samples this Machine and its Ployz containers; keeps the previous readings rates are taken against. */
export class Sampler {
  readonly #scanner: StateScanner;
  readonly #cgroups: CgroupReader;
  readonly #proc: string;
  readonly #procRefused: boolean;
  readonly #cgroupRoot: string;
  readonly #slow: (() => Values) | undefined;
  readonly #previous = new Map<string, Previous>();
  #machineCpu: CpuTimes | undefined;
  #machineNet: { rx: number; tx: number } | undefined;
  #lastRoundMs: number | undefined;

  /** A sampler over `options.dockerRoot`. */
  constructor(options: SamplerOptions) {
    this.#scanner = new StateScanner(options.dockerRoot);
    this.#cgroups = new CgroupReader(options);
    this.#proc = options.procRoot ?? "/proc";
    this.#procRefused = readRefused(this.#proc);
    this.#cgroupRoot = options.cgroupRoot ?? "/sys/fs/cgroup";
    this.#slow = options.slow;
  }

  /** Mounts this process may not read (their values are the gap `not_permitted`): `[]` when all is well. */
  get refused(): string[] {
    return [...(this.#procRefused ? [this.#proc] : []), ...(this.#cgroups.refused ? [this.#cgroupRoot] : [])];
  }

  /** The cgroup version found. */
  get cgroupVersion(): 1 | 2 {
    return this.#cgroups.version;
  }

  /** Reads one round, stamped `timeMs`. */
  sample(timeMs: number = Date.now()): SampleRound {
    const scan = this.#scanner.scan();
    const round: SampleRound = { timeMs, containers: [], machine: this.#sampleMachine() };
    const sinceMs = this.#lastRoundMs ?? timeMs;
    for (const state of scan.containers.values()) {
      round.containers.push(this.#sampleContainer(state, timeMs, sinceMs));
    }
    for (const [id, previous] of this.#previous) {
      if (scan.containers.has(id)) continue;
      // A directory we could not read this time is not gone; its values are.
      const reason: GapReason = scan.unreadable.has(id) ? "config_unreadable" : "container_gone";
      const values = Object.fromEntries(CONTAINER_METRICS.map((m) => [m, gap(reason)]));
      round.containers.push({
        identity: previous.state.identity,
        values,
        markers: [],
        gone: reason !== "config_unreadable",
      });
      if (reason === "container_gone") this.#previous.delete(id);
    }
    this.#cgroups.retain(new Set(scan.containers.keys()));
    this.#lastRoundMs = timeMs;
    return round;
  }

  #sampleContainer(state: ContainerState, timeMs: number, sinceMs: number): ContainerSample {
    const id = state.identity.containerId;
    const previous = this.#previous.get(id);
    const markers = markersBetween(previous?.state, state, timeMs, sinceMs);
    const restarted = previous !== undefined && previous.state.startedAt !== state.startedAt;
    const next: Previous = { state, timeMs };
    const values: Values = {};
    const delta = (key: "cpuNs" | "ioRead" | "ioWrite" | "rx" | "tx", reading: Reading): Reading => {
      if (isGap(reading)) return reading;
      next[key] = reading;
      const before = previous?.[key];
      if (restarted) return gap("restarted");
      if (before === undefined) return gap("first_sample");
      if (reading < before) return gap("counter_reset");
      return reading - before;
    };
    if (!state.running) {
      for (const m of ["cpu", "memory", "net_rx", "net_tx", "disk_read", "disk_write"] as const) {
        values[m] = gap("not_running");
      }
    } else {
      const counters = this.#cgroups.read(id, state.pid);
      const cpu = delta("cpuNs", counters.cpuNs);
      const seconds = previous === undefined ? 0 : (timeMs - previous.timeMs) / 1000;
      values.cpu = isGap(cpu) ? cpu : seconds > 0 ? cpu / 1e9 / seconds : gap("first_sample");
      values.memory = counters.memoryBytes;
      values.disk_read = delta("ioRead", counters.ioReadBytes);
      values.disk_write = delta("ioWrite", counters.ioWriteBytes);
      if (state.pid <= 0) {
        values.net_rx = values.net_tx = gap("no_pid");
      } else {
        const text = this.#procRefused
          ? undefined
          : readText(join(this.#proc, String(state.pid), "net", "dev"));
        const net = text === undefined ? undefined : parseNetDev(text);
        const unread = gap(this.#procRefused ? "not_permitted" : "proc_unreadable");
        values.net_rx = delta("rx", net?.rx ?? unread);
        values.net_tx = delta("tx", net?.tx ?? unread);
      }
    }
    values.restarts = previous === undefined
      ? gap("first_sample")
      : state.restartCount < previous.state.restartCount
      ? gap("counter_reset")
      : state.restartCount - previous.state.restartCount;
    this.#previous.set(id, next);
    return { identity: state.identity, values, markers, gone: false };
  }

  #sampleMachine(): Values {
    const values: Values = {};
    if (this.#procRefused) {
      for (const m of ["cpu", "memory", "net_rx", "net_tx", "load1"] as const) {
        values[m] = gap("not_permitted");
      }
      return { ...values, ...this.#slow?.() };
    }
    const statText = readText(join(this.#proc, "stat"));
    const cpu = statText === undefined ? undefined : parseProcStat(statText);
    if (cpu === undefined) {
      values.cpu = gap("proc_unreadable");
    } else {
      const cores = this.#machineCpu === undefined ? undefined : machineCores(this.#machineCpu, cpu);
      values.cpu = cores ?? gap(this.#machineCpu === undefined ? "first_sample" : "counter_reset");
      this.#machineCpu = cpu;
    }
    const memText = readText(join(this.#proc, "meminfo"));
    values.memory = (memText === undefined ? undefined : parseMeminfo(memText)) ?? gap("proc_unreadable");
    const netText = readText(join(this.#proc, "net", "dev"));
    const net = netText === undefined ? undefined : parseNetDev(netText, true);
    if (net === undefined) {
      values.net_rx = values.net_tx = gap("proc_unreadable");
    } else {
      const before = this.#machineNet;
      values.net_rx = before === undefined
        ? gap("first_sample")
        : net.rx < before.rx
        ? gap("counter_reset")
        : net.rx - before.rx;
      values.net_tx = before === undefined
        ? gap("first_sample")
        : net.tx < before.tx
        ? gap("counter_reset")
        : net.tx - before.tx;
      this.#machineNet = net;
    }
    const loadText = readText(join(this.#proc, "loadavg"));
    values.load1 = (loadText === undefined ? undefined : parseLoadavg(loadText)) ?? gap("proc_unreadable");
    return { ...values, ...this.#slow?.() };
  }
}
