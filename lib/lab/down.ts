/**
 * `labDown`: removes everything a lab made, from its state file alone, whether `up` finished, failed or crashed:
 * each Machine's ployzd, its containers and dockerd, every process left in its namespace (and their children), the WireGuard
 * interfaces and any `wireguard-go` still serving them, the namespaces (their veths and the bridge go with them),
 * mounts under the lab directory, and the directory. Safe to run twice.
 *
 * @module
 */

import { netnsRunner } from "../mesh/mod.ts";
import { stopDockerd } from "./dockerd.ts";
import { daemonLayout, netnsPresent, stopDaemonProcess } from "./ployzd.ts";
import { btrfsPoolRoot, detachLoopPool, hostExec } from "../volume/mod.ts";
import { join } from "node:path";
import { findPids, mountsUnder, stopPids, tryRun, withDescendants } from "./host.ts";
import { readState } from "./state.ts";

/** What {@link labDown} removed. */
export interface LabDownResult {
  /** Whether a lab was found in the directory. */
  found: boolean;
  /** Namespaces deleted. */
  namespaces: string[];
  /** Processes stopped (dockerd counted once per Machine, plus leftovers). */
  processes: number;
  /** Whether the directory was removed. */
  dirRemoved: boolean;
}

async function netnsExists(name: string): Promise<boolean> {
  try {
    await Deno.stat(`/var/run/netns/${name}`);
    return true;
  } catch {
    return false;
  }
}

async function netnsPids(name: string): Promise<number[]> {
  const out = await tryRun("ip", ["netns", "pids", name]);
  return out.stdout.split("\n").filter((s) => /^\d+$/.test(s)).map(Number);
}

/** Tears a lab down; see the module comment for what goes. */
export async function labDown(options: { dir: string }): Promise<LabDownResult> {
  const state = await readState(options.dir);
  if (state === undefined) return { found: false, namespaces: [], processes: 0, dirRemoved: false };
  const { plan } = state;
  let processes = 0;
  await Promise.all(plan.machines.map(async (m) => {
    if (await netnsPresent(m)) processes += await stopDaemonProcess(m);
  }));
  await Promise.all(plan.machines.map(async (m) => {
    if (await stopDockerd(m)) processes++;
  }));
  for (const m of plan.machines) {
    if (await netnsExists(m.namespace)) {
      const left = withDescendants(await netnsPids(m.namespace));
      processes += left.length;
      await stopPids(left, "SIGKILL", 5_000);
      await netnsRunner(m.namespace).run("ip", ["link", "del", "dev", m.wgInterface]);
    }
    // A wireguard-go that outlived its namespace still holds the UAPI socket; it is ours by its exact argv.
    const stray = findPids((argv) => argv[0].endsWith("wireguard-go") && argv.at(-1) === m.wgInterface);
    processes += stray.length;
    await stopPids(stray, "SIGKILL", 5_000);
    await Deno.remove(`/var/run/wireguard/${m.wgInterface}.sock`).catch(() => {});
  }
  if (await netnsExists(plan.underlayNamespace)) {
    // The latency relay runs there.
    const left = withDescendants(await netnsPids(plan.underlayNamespace));
    processes += left.length;
    await stopPids(left, "SIGKILL", 5_000);
  }
  const namespaces: string[] = [];
  for (const ns of [...plan.machines.map((m) => m.namespace), plan.underlayNamespace]) {
    if (!(await netnsExists(ns))) continue;
    await tryRun("ip", ["netns", "del", ns]);
    namespaces.push(ns);
  }
  for (const point of mountsUnder(plan.dir)) await tryRun("umount", ["-l", point]);
  // Loop devices of the Machines' Pools (`--pool`): detached once unmounted, or as soon as the last user lets go.
  if (state.poolBytes !== undefined) {
    for (const m of plan.machines) {
      const file = join(daemonLayout(m).dataDir, "pool.img");
      await detachLoopPool(hostExec(), { file, mountPoint: btrfsPoolRoot(daemonLayout(m).dataDir) });
    }
  }
  let dirRemoved = false;
  try {
    await Deno.remove(plan.dir, { recursive: true });
    dirRemoved = true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) dirRemoved = true;
    else throw error;
  }
  return { found: true, namespaces, processes, dirRemoved };
}
