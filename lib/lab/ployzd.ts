/**
 * One `ployzd serve` per lab Machine, started inside the Machine's network namespace (`nsenter --net`) in its own
 * session, under the relocated `serve` permission set, with its data, runtime directory, Docker socket and
 * WireGuard interface all its own. Found again by its namespace and command line, never by a broad name.
 *
 * @module
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { netnsPath } from "../mesh/mod.ts";
import {
  DAEMON_BUNDLE,
  daemonCommand,
  type Layout,
  layoutEnv,
  type PermissionSet,
  runtimeEnvironment,
} from "../permissions/mod.ts";
import { connectMachine, type MachineClient } from "../rpc/mod.ts";
import { LabError } from "./errors.ts";
import { pollUntil } from "../util/mod.ts";
import { cmdlineOf, spawnDetached, stopPids, tryRun } from "./host.ts";
import type { MachinePlan } from "./plan.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
// What a Machine's ployzd may run from: the source, or the bundle an installed Machine runs while it is fresh.
const ENTRIES = [join(ROOT, "cmd", "ployzd.ts"), join(ROOT, DAEMON_BUNDLE)];

/**
 * Variables a lab passes from its own environment to every ployzd: membership thresholds, timing, the retire bound,
 * the Ingress Proxy rescan period, Internal DNS's upstreams and how long an abandoned build upload is kept.
 */
export const DAEMON_ENV_PREFIXES = [
  "PLOYZ_MEMBERSHIP_",
  "PLOYZ_MESH_TICK_MS",
  "PLOYZ_SYNC_INTERVAL_MS",
  "PLOYZ_RETIRE_AFTER_SECONDS",
  "PLOYZ_INGRESS_RESCAN_SECONDS",
  "PLOYZ_DNS_UPSTREAMS",
  "PLOYZ_ACME_",
  "PLOYZ_BUILD_UPLOAD_IDLE_MS",
];

/** The Machine's ployzd layout. */
export function daemonLayout(m: MachinePlan): Layout {
  return {
    dataDir: m.ployzDataDir ?? join(m.dir, "ployz"),
    runDir: m.ployzRunDir ?? join(m.dir, "run"),
    dockerSocket: m.dockerSocket,
    dockerRoot: join(m.dir, "data"),
  };
}

/** The Machine's Machine RPC socket. */
export function daemonSocket(m: MachinePlan): string {
  return join(daemonLayout(m).runDir, "ployz.sock");
}

/** A Machine RPC client of the lab Machine's ployzd. */
export function daemonClient(m: MachinePlan): MachineClient {
  return connectMachine({ socketPath: daemonSocket(m), label: `lab Machine "${m.name}"` });
}

/** The environment the Machine's ployzd runs with. */
export function daemonEnv(m: MachinePlan, extra: Record<string, string> = {}): Record<string, string> {
  const layout = daemonLayout(m);
  const inherited: Record<string, string> = {};
  // Deno finds its cache through these.
  for (const key of ["HOME", "DENO_DIR", "XDG_CACHE_HOME"]) {
    const value = Deno.env.get(key);
    if (value !== undefined) inherited[key] = value;
  }
  const observeHost = join(layout.runDir, "observe-host");
  return {
    ...inherited,
    PATH: Deno.env.get("PATH") ?? "/usr/sbin:/usr/bin:/sbin:/bin",
    PLOYZ_OBSERVE_PROC_ROOT: join(observeHost, "proc"),
    PLOYZ_OBSERVE_CGROUP_ROOT: join(observeHost, "cgroup"),
    RUST_BACKTRACE: "0",
    NO_COLOR: "1",
    ...layoutEnv(layout),
    PLOYZ_WG_INTERFACE: m.wgInterface,
    PLOYZ_WG_PORT: "51820",
    PLOYZ_ADVERTISE_ENDPOINTS: `${m.underlayAddress}:51820`,
    ...runtimeEnvironment("serve"),
    ...extra,
  };
}

/**
 * The command prefix that gives the daemon the observe host view an installed Machine's `ployz-observe` unit has
 * (`tools/observe_host_view.sh`: `/proc` and `/sys/fs/cgroup` read-only under `<run dir>/observe-host`, in a
 * private mount namespace of the daemon and its children), so `ployz top` in a lab shows real figures.
 */
function observeHostView(layout: Layout): string[] {
  return [join(ROOT, "tools", "observe_host_view.sh"), join(layout.runDir, "observe-host")];
}

/** Starts the Machine's ployzd detached (its own session), appending to its log; does not wait for it. */
export async function startDaemonProcess(
  m: MachinePlan,
  extraEnv: Record<string, string> = {},
): Promise<void> {
  const layout = daemonLayout(m);
  await Deno.mkdir(layout.dataDir, { recursive: true });
  await Deno.mkdir(layout.runDir, { recursive: true });
  const directory = daemonEnv(m, extraEnv).PLOYZ_ACME_DIRECTORY;
  const widen = (set: PermissionSet): PermissionSet => {
    // A lab names its own ACME CA (Pebble in the underlay); the daemon may reach exactly that host and port.
    if (directory !== undefined && URL.canParse(directory) && Array.isArray(set.net)) {
      const url = new URL(directory);
      set.net = [...set.net, `${url.hostname}:${url.port === "" ? "443" : url.port}`];
    }
    // No systemd in a lab namespace: the daemon spawns `ployzd dns` as a child with this same deno.
    const runs = Array.isArray(set.run) ? set.run : [];
    return set.run === true ? set : { ...set, run: [...runs, Deno.execPath()] };
  };
  const env = Object.entries(daemonEnv(m, extraEnv)).map(([k, v]) => `${k}=${v}`);
  await spawnDetached([
    "env",
    "-i",
    ...env,
    "nsenter",
    `--net=${netnsPath(m.namespace)}`,
    "--",
    ...observeHostView(layout),
    ...daemonCommand("serve", {
      config: ["--config", join(ROOT, "deno.json")],
      layout,
      root: ROOT,
      widen,
    }),
    "--rescan-seconds",
    "10",
  ], m.ployzLog ?? join(m.dir, "ployzd.log"));
}

/** The pids of the Machine's ployzd: processes in its namespace running `ployzd serve` (source or bundle). */
export async function daemonPids(m: MachinePlan): Promise<number[]> {
  const out = await tryRun("ip", ["netns", "pids", m.namespace]);
  return out.stdout.split("\n").filter((s) => /^\d+$/.test(s)).map(Number).filter((pid) => {
    const argv = cmdlineOf(pid);
    return argv !== undefined && ENTRIES.some((entry) => argv.includes(entry)) && argv.includes("serve");
  });
}

/** Waits until the Machine's ployzd answers on its socket, or throws naming its log. */
export async function waitDaemon(m: MachinePlan, timeoutMs: number): Promise<void> {
  const ready = await pollUntil(async () => {
    using client = daemonClient(m);
    try {
      await client.describeContract({ signal: AbortSignal.timeout(5_000) });
      return true;
    } catch {
      return false;
    }
    // Every 50 ms: an ask that finds no socket yet costs one failed connect.
  }, { timeoutMs, intervalMs: 50 });
  if (!ready) {
    throw new LabError(
      "unavailable",
      `Cannot reach ployzd of lab Machine "${m.name}" within ${timeoutMs / 1000} s: see "${m.ployzLog}"`,
    );
  }
}

/** Stops the Machine's ployzd (SIGTERM, then SIGKILL after 15 s); returns how many processes were stopped. */
export async function stopDaemonProcess(m: MachinePlan): Promise<number> {
  const pids = await daemonPids(m);
  const left = await stopPids(pids, "SIGTERM", 15_000);
  if (left.length > 0) await stopPids(left, "SIGKILL", 5_000);
  return pids.length;
}

/** Whether a path exists; for the netns check before asking for its pids. */
export async function netnsPresent(m: MachinePlan): Promise<boolean> {
  try {
    await Deno.stat(netnsPath(m.namespace));
    return true;
  } catch {
    return false;
  }
}
