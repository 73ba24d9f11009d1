/**
 * Operating a running lab: status, running a command inside a Machine, partitions and healing.
 *
 * @module
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { netnsPath, netnsRunner, observeMembership, readPeers, runChecked } from "../mesh/mod.ts";
import type { ListMachinesResponse } from "../rpc/mod.ts";
import { dockerdAnswers, startDockerd, stopDockerd, waitDockerd } from "./dockerd.ts";
import { LabError } from "./errors.ts";
import { type LabPlan, machineByName, RELAY_ADDRESS } from "./plan.ts";
import { relayPort } from "./relay.ts";
import { checkPrerequisites } from "./prereq.ts";
import { dockerNetworkingOf, type LabState, requireState, writeState } from "./state.ts";
import { LAB_CHAIN } from "./up.ts";
import {
  daemonClient,
  daemonLayout,
  daemonPids,
  startDaemonProcess,
  stopDaemonProcess,
  waitDaemon,
} from "./ployzd.ts";
import { messageOf } from "../util/mod.ts";

/** One peer as one lab Machine sees it. */
export interface LabPeerStatus {
  /** The peer Machine's name. */
  machine: string;
  /** The endpoint in use. */
  endpoint?: string;
  /** Latest handshake (RFC 3339), if any. */
  latestHandshake?: string;
  /** This Machine's membership observation of the peer. */
  membership: "unknown" | "up" | "suspect" | "down";
}

/** One lab Machine's status. */
export interface LabMachineStatus {
  /** `m1`, … */
  name: string;
  /** Its namespace, and whether it exists. */
  namespace: string;
  /** Whether the namespace exists. */
  namespacePresent: boolean;
  /** Whether its dockerd answered. */
  dockerd: boolean;
  /** Its dockerd socket (`DOCKER_HOST=unix://…`). */
  dockerSocket: string;
  /** Its Machine Subnet. */
  subnet: string;
  /** Its WireGuard interface. */
  wgInterface: string;
  /** Its peers as it observes them; empty when the interface could not be read. */
  peers: LabPeerStatus[];
  /** Why the peers could not be read, if so. */
  peersError?: string;
  /** Whether its ployzd answered. */
  ployzd?: boolean;
  /** Its ployzd's `machine ls` observation. */
  machineList?: ListMachinesResponse;
  /** Why its ployzd could not be asked, if so. */
  machineListError?: string;
}

/** A lab's status: every Machine's own observation. */
export interface LabStatus {
  /** The lab name. */
  name: string;
  /** The lab directory. */
  dir: string;
  /** `creating` or `up`. */
  phase: string;
  /** The impairment profile. */
  profile: string;
  /** Active partitions. */
  partitions: [string[], string[]][];
  /** The Machines. */
  machines: LabMachineStatus[];
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Reads the lab's status from each Machine. */
export async function labStatus(options: { dir: string }): Promise<LabStatus> {
  const state = await requireState(options.dir);
  const { plan } = state;
  const byKey = new Map(Object.entries(state.publicKeys).map(([name, key]) => [key, name]));
  const now = Date.now();
  const machines = await Promise.all(plan.machines.map(async (m): Promise<LabMachineStatus> => {
    const namespacePresent = await exists(netnsPath(m.namespace));
    const status: LabMachineStatus = {
      name: m.name,
      namespace: m.namespace,
      namespacePresent,
      dockerd: namespacePresent && await dockerdAnswers(m),
      dockerSocket: m.dockerSocket,
      subnet: m.subnet,
      wgInterface: m.wgInterface,
      peers: [],
    };
    if (!namespacePresent) return status;
    using client = daemonClient(m);
    try {
      status.machineList = await client.listMachines({ signal: AbortSignal.timeout(10_000) });
      status.ployzd = true;
    } catch (error) {
      status.ployzd = false;
      status.machineListError = messageOf(error);
    }
    try {
      status.peers = (await readPeers(netnsRunner(m.namespace), m.wgInterface)).map((p) => ({
        machine: byKey.get(p.publicKey) ?? p.publicKey,
        endpoint: p.endpoint,
        latestHandshake: p.latestHandshake === undefined
          ? undefined
          : new Date(p.latestHandshake).toISOString(),
        membership: observeMembership({ now, latestHandshake: p.latestHandshake }),
      }));
    } catch (error) {
      status.peersError = messageOf(error);
    }
    return status;
  }));
  return {
    name: plan.name,
    dir: plan.dir,
    phase: state.phase,
    profile: state.profile,
    partitions: state.partitions,
    machines,
  };
}

const BIN = fileURLToPath(new URL("../../bin", import.meta.url));

/**
 * Runs `argv` inside a lab Machine's network namespace, with `DOCKER_HOST` pointing at that Machine's dockerd,
 * `PLOYZ_RUN_DIR` at its ployzd (so `ployz` there talks to that Machine), `PLOYZ_CONFIG_DIR` at the lab
 * operator's, and the repository's `bin/` first on `PATH`. `inherit` wires the caller's stdio; otherwise output is
 * collected.
 */
export async function labExec(
  options: { dir: string; machine: string; argv: string[]; inherit?: boolean },
): Promise<{ code: number; stdout: string; stderr: string }> {
  if (options.argv.length === 0) {
    throw new LabError("invalid_argument", "Cannot run an empty command in a lab Machine");
  }
  const state = await requireState(options.dir);
  const m = machineByName(state.plan, options.machine);
  const io = options.inherit ? "inherit" : "piped";
  const out = await new Deno.Command("nsenter", {
    args: [`--net=${netnsPath(m.namespace)}`, "--", ...options.argv],
    env: {
      DOCKER_HOST: `unix://${m.dockerSocket}`,
      PLOYZ_RUN_DIR: daemonLayout(m).runDir,
      PLOYZ_CONFIG_DIR: state.plan.operatorDir ?? join(state.plan.dir, "operator"),
      PATH: `${BIN}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`,
    },
    stdin: options.inherit ? "inherit" : "null",
    stdout: io,
    stderr: io,
  }).output();
  const decoder = new TextDecoder();
  return {
    code: out.code,
    stdout: options.inherit ? "" : decoder.decode(out.stdout),
    stderr: options.inherit ? "" : decoder.decode(out.stderr),
  };
}

function groupOf(plan: LabPlan, names: string[], what: string): string[] {
  if (names.length === 0) throw new LabError("invalid_argument", `Cannot partition: ${what} is empty`);
  for (const name of names) machineByName(plan, name);
  return [...new Set(names)];
}

async function applyPartitions(state: LabState): Promise<void> {
  const { plan } = state;
  for (const m of plan.machines) await runChecked(netnsRunner(m.namespace), "iptables", ["-F", LAB_CHAIN]);
  for (const [a, b] of state.partitions) {
    for (const [from, to] of [[a, b], [b, a]]) {
      for (const name of from) {
        const r = netnsRunner(machineByName(plan, name).namespace);
        const self = machineByName(plan, name);
        for (const other of to) {
          const peer = machineByName(plan, other);
          const address = peer.underlayAddress;
          await runChecked(r, "iptables", ["-A", LAB_CHAIN, "-s", address, "-j", "DROP"]);
          await runChecked(r, "iptables", ["-A", LAB_CHAIN, "-d", address, "-j", "DROP"]);
          // Under a latency profile the peer is reached through its relay port instead.
          const port = String(relayPort(self.index, peer.index));
          const udp = ["-A", LAB_CHAIN, "-p", "udp"];
          await runChecked(r, "iptables", [...udp, "-d", RELAY_ADDRESS, "--dport", port, "-j", "DROP"]);
          await runChecked(r, "iptables", [...udp, "-s", RELAY_ADDRESS, "--sport", port, "-j", "DROP"]);
        }
      }
    }
  }
}

/**
 * Cuts the underlay between two groups of Machines (iptables DROP on each side, both directions). Partitions add up;
 * {@link labHeal} removes them all.
 */
export async function labPartition(
  options: { dir: string; groupA: string[]; groupB: string[] },
): Promise<LabState> {
  checkPrerequisites();
  const state = await requireState(options.dir);
  const a = groupOf(state.plan, options.groupA, "the first group");
  const b = groupOf(state.plan, options.groupB, "the second group");
  const both = a.filter((n) => b.includes(n));
  if (both.length > 0) {
    throw new LabError("invalid_argument", `Cannot partition: "${both[0]}" is in both groups`);
  }
  state.partitions.push([a, b]);
  await applyPartitions(state);
  await writeState(options.dir, state);
  return state;
}

/** Removes every partition. */
export async function labHeal(options: { dir: string }): Promise<LabState> {
  checkPrerequisites();
  const state = await requireState(options.dir);
  state.partitions = [];
  await applyPartitions(state);
  await writeState(options.dir, state);
  return state;
}

/**
 * Restarts a lab Machine's ployzd (SIGTERM, wait, start, wait until it answers). Its WireGuard interface, dockerd and
 * containers are left alone: they outlive the daemon.
 */
export async function labRestart(
  options: { dir: string; machine: string; daemonEnv?: Record<string, string> },
): Promise<{ stopped: number; elapsedMs: number }> {
  checkPrerequisites();
  const state = await requireState(options.dir);
  const m = machineByName(state.plan, options.machine);
  const started = Date.now();
  const stopped = await stopDaemonProcess(m);
  if ((await daemonPids(m)).length > 0) {
    throw new LabError("unavailable", `Cannot restart ployzd of "${m.name}": it did not stop`);
  }
  await startDaemonProcess(m, { ...state.daemonEnv, ...options.daemonEnv });
  await waitDaemon(m, 60_000);
  return { stopped, elapsedMs: Date.now() - started };
}

/**
 * Restarts a lab Machine's dockerd alone, as `systemctl restart docker` would: dockerd stops its containers and keeps
 * them, starts again with the lab's Docker networking, and starts again the containers whose restart policy says so.
 * Its ployzd keeps running.
 */
export async function labRestartDockerd(
  options: { dir: string; machine: string },
): Promise<{ elapsedMs: number }> {
  checkPrerequisites();
  const state = await requireState(options.dir);
  const m = machineByName(state.plan, options.machine);
  const started = Date.now();
  await stopDockerd(m, { keepContainers: true });
  await startDockerd(m, dockerNetworkingOf(state), state.dockerdConfig);
  await waitDockerd(m, 90_000);
  return { elapsedMs: Date.now() - started };
}

/**
 * Stops a lab Machine as a shutdown would: its ployzd, then its dockerd, which stops the containers and keeps them.
 * Its namespace, WireGuard interface and mesh routes stay, so {@link labStartMachine} is the boot that follows.
 */
export async function labStopMachine(
  options: { dir: string; machine: string },
): Promise<{ daemons: number; dockerd: boolean }> {
  checkPrerequisites();
  const state = await requireState(options.dir);
  const m = machineByName(state.plan, options.machine);
  const daemons = await stopDaemonProcess(m);
  if ((await daemonPids(m)).length > 0) {
    throw new LabError("unavailable", `Cannot stop ployzd of "${m.name}": it did not stop`);
  }
  const dockerd = await stopDockerd(m, { keepContainers: true });
  return { daemons, dockerd };
}

/**
 * Boots a lab Machine stopped by {@link labStopMachine}: its dockerd first (which starts again the containers whose
 * restart policy says so, and records a failed start as Docker does at boot), then its ployzd; resolves once both
 * answer.
 */
export async function labStartMachine(
  options: { dir: string; machine: string; daemonEnv?: Record<string, string> },
): Promise<{ elapsedMs: number }> {
  checkPrerequisites();
  const state = await requireState(options.dir);
  const m = machineByName(state.plan, options.machine);
  const started = Date.now();
  if (!(await dockerdAnswers(m))) {
    await startDockerd(m, dockerNetworkingOf(state), state.dockerdConfig);
    await waitDockerd(m, 90_000);
  }
  if ((await daemonPids(m)).length === 0) {
    await startDaemonProcess(m, { ...state.daemonEnv, ...options.daemonEnv });
  }
  await waitDaemon(m, 60_000);
  return { elapsedMs: Date.now() - started };
}
