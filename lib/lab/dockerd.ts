/**
 * One dockerd per lab Machine, started inside the Machine's network namespace with `nsenter --net` (not
 * `ip netns exec`, which remounts /sys and breaks dockerd's cgroup detection), with its own data root, exec root,
 * socket and pidfile under the Machine's directory. Its default bridge keeps Docker's own range (each namespace is
 * separate); the Machine Subnet is the `ployz` network ployzd creates when the Machine joins.
 *
 * Its networking is Docker's default, as installed: iptables management (DOCKER and DOCKER-USER chains, FORWARD
 * policy DROP when Docker turns IP forwarding on itself, DNAT for published ports) and IP masquerade. A lab made
 * with `dockerNetworking: "off"` runs `--iptables=false --ip-masq=false` instead, for a test that wants Docker out
 * of the host's firewall. The other flags depart from a real install as the lab module comment lists.
 *
 * @module
 */

import { join } from "node:path";
import { netnsPath } from "../mesh/mod.ts";
import { LabError } from "./errors.ts";
import { pollUntil } from "../util/mod.ts";
import { alive, cmdlineOf, sh, spawnDetached, stopPids, tryRun } from "./host.ts";
import type { MachinePlan } from "./plan.ts";

/** The `docker` arguments that reach a Machine's dockerd. */
export function dockerHost(machine: MachinePlan): string[] {
  return ["-H", `unix://${machine.dockerSocket}`];
}

/** How the lab runs Docker's networking: as installed (`default`), or with iptables and masquerade off (`off`). */
export type DockerNetworking = "default" | "off";

/** The Docker networking modes. */
export const DOCKER_NETWORKING: readonly DockerNetworking[] = ["default", "off"];

/** What a lab writes into each dockerd's `daemon.json` beyond its defaults. */
export interface DockerdConfig {
  /** Registries reached over plain HTTP (`insecure-registries`), as `host:port`. */
  insecureRegistries?: string[];
  /** Docker's attempts per layer download (`max-download-attempts`; Docker's default is 5, 5 s apart and more). */
  maxDownloadAttempts?: number;
}

const REGISTRY_HOST = /^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})(?::[0-9]{1,5})?$/;

/** Why `config` cannot be a lab dockerd's, or `undefined` when it can. */
export function dockerdConfigProblem(config: DockerdConfig): string | undefined {
  for (const host of config.insecureRegistries ?? []) {
    if (!REGISTRY_HOST.test(host)) return `insecure registry "${host}" is not HOST or HOST:PORT`;
  }
  const attempts = config.maxDownloadAttempts;
  if (attempts !== undefined && (!Number.isInteger(attempts) || attempts < 1 || attempts > 20)) {
    return `max download attempts must be a whole number from 1 to 20: got ${attempts}`;
  }
  return undefined;
}

/** Starts the Machine's dockerd, detached; its log goes to `<dir>/dockerd.log`. */
export async function startDockerd(
  machine: MachinePlan,
  networking: DockerNetworking = "default",
  extra: DockerdConfig = {},
): Promise<void> {
  await Deno.mkdir(machine.dir, { recursive: true });
  const config = join(machine.dir, "daemon.json");
  // Always written, so the host's /etc/docker/daemon.json never applies.
  const body = {
    ...(extra.insecureRegistries?.length ? { "insecure-registries": extra.insecureRegistries } : {}),
    ...(extra.maxDownloadAttempts === undefined
      ? {}
      : { "max-download-attempts": extra.maxDownloadAttempts }),
  };
  await Deno.writeTextFile(config, JSON.stringify(body) + "\n");
  await spawnDetached([
    "nsenter",
    `--net=${netnsPath(machine.namespace)}`,
    "--",
    "dockerd",
    "--config-file",
    config,
    "--data-root",
    join(machine.dir, "data"),
    "--exec-root",
    join(machine.dir, "exec"),
    "-H",
    `unix://${machine.dockerSocket}`,
    "--pidfile",
    machine.dockerPidfile,
    ...(networking === "off" ? ["--iptables=false", "--ip-masq=false"] : []),
    "--mtu",
    "1420",
    "--storage-driver",
    "vfs",
    "--shutdown-timeout",
    "2",
    "--log-level",
    "warn",
  ], join(machine.dir, "dockerd.log"));
}

/**
 * Whether the Machine's dockerd answers Docker's `/_ping` on its socket within 5 s. Asked in this process, not by
 * running `docker`: readiness is polled every 100 ms on three Machines at once, and each `docker` run costs tens of
 * milliseconds of CPU on a host the lab shares with its own daemons.
 */
export async function dockerdAnswers(machine: MachinePlan): Promise<boolean> {
  const client = Deno.createHttpClient({ proxy: { transport: "unix", path: machine.dockerSocket } });
  try {
    // The host part is never resolved: the request goes over the socket.
    const response = await fetch("http://docker/_ping", { client, signal: AbortSignal.timeout(5_000) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  } finally {
    client.close();
  }
}

/** Waits until the Machine's dockerd answers, or throws naming its log. */
export async function waitDockerd(machine: MachinePlan, timeoutMs: number): Promise<void> {
  // Every 100 ms: a dockerd answers within about a second, and each ask is one short `docker` run.
  if (await pollUntil(() => dockerdAnswers(machine), { timeoutMs, intervalMs: 100 })) return;
  throw new LabError(
    "unavailable",
    `Cannot reach dockerd of lab Machine "${machine.name}" within ${timeoutMs / 1000} s: see "${
      join(machine.dir, "dockerd.log")
    }"`,
  );
}

/** The Machine's dockerd pid, from its pidfile, only if that process is this Machine's dockerd. */
export function dockerdPid(machine: MachinePlan): number | undefined {
  let pid: number;
  try {
    pid = Number(Deno.readTextFileSync(machine.dockerPidfile).trim());
  } catch {
    return undefined;
  }
  const argv = cmdlineOf(pid);
  if (
    argv === undefined || !argv[0].endsWith("dockerd") || !argv.includes(`unix://${machine.dockerSocket}`)
  ) {
    return undefined;
  }
  return alive(pid) ? pid : undefined;
}

/**
 * Stops the Machine's dockerd. By default it first removes every container (fast: dockerd's own shutdown would wait
 * on each); with `keepContainers` dockerd stops them itself, as at a shutdown, and they stay for its next start.
 */
export async function stopDockerd(
  machine: MachinePlan,
  options: { keepContainers?: boolean } = {},
): Promise<boolean> {
  if (options.keepContainers !== true && await dockerdAnswers(machine)) {
    const ids = (await tryRun("docker", [...dockerHost(machine), "ps", "-aq"])).stdout.split("\n").filter((
      s,
    ) => s);
    if (ids.length > 0) await tryRun("docker", [...dockerHost(machine), "rm", "-f", ...ids]);
  }
  const pid = dockerdPid(machine);
  if (pid === undefined) return false;
  const left = await stopPids([pid], "SIGTERM", 15_000);
  if (left.length > 0) await stopPids(left, "SIGKILL", 5_000);
  return true;
}

/** Saves `images` from the host's Docker (`hostSocket`) into one tar under `dir`; returns the images it found. */
export async function saveImages(hostSocket: string, images: string[], tarPath: string): Promise<string[]> {
  const present: string[] = [];
  for (const image of images) {
    const found = await tryRun("docker", ["-H", `unix://${hostSocket}`, "image", "inspect", image]);
    if (found.code === 0) present.push(image);
  }
  if (present.length > 0) {
    await sh("docker", ["-H", `unix://${hostSocket}`, "save", "-o", tarPath, ...present]);
  }
  return present;
}

/** Loads a saved image tar into the Machine's dockerd. */
export async function loadImages(machine: MachinePlan, tarPath: string): Promise<void> {
  await sh("docker", [...dockerHost(machine), "load", "-q", "-i", tarPath]);
}
