/**
 * WireGuard control through the `ip` and `wg` commands. One code path serves kernel WireGuard and `wireguard-go`:
 * only creating the interface differs (`ip link add … type wireguard` when the kernel module exists, else
 * `wireguard-go <ifname>`, which creates a TUN device and its UAPI socket `/var/run/wireguard/<ifname>.sock`, then
 * detaches). Keys, peers, addresses and routes are then set the same way for both.
 *
 * @module
 */

import { MeshError } from "./errors.ts";
import { type CommandRunner, runChecked } from "./runner.ts";

/** How the interface was made. */
export type WireGuardBackend = "kernel" | "wireguard-go";

/** What {@link ensureInterface} needs. */
export interface InterfaceOptions {
  /** Interface name, at most 15 characters; distinct across namespaces for `wireguard-go` (its UAPI socket path is
   * host-wide). */
  name: string;
  /** Path of the private key file (mode 0600); handed to `wg` as a path, never read here. */
  privateKeyPath: string;
  /** UDP listen port; default 51820. */
  listenPort?: number;
  /** MTU; default 1420. */
  mtu?: number;
  /** Addresses to assign, e.g. the Management Address as `fdcc:…/128`. */
  addresses?: string[];
  /** Force a backend instead of detecting one. */
  backend?: WireGuardBackend;
}

/** What {@link ensureInterface} did. */
export interface InterfaceResult {
  /** Whether the interface was created by this call. */
  created: boolean;
  /** The backend of a created interface; `undefined` when it already existed. */
  backend?: WireGuardBackend;
}

const NAME = /^[A-Za-z0-9_.-]{1,15}$/;

function checkName(name: string): void {
  if (!NAME.test(name)) {
    throw new MeshError(
      "invalid_argument",
      `Cannot use interface name "${name}": 1 to 15 letters, digits, "_", "." or "-"`,
    );
  }
}

/** Whether a network interface exists where `runner` runs. */
export async function interfaceExists(runner: CommandRunner, name: string): Promise<boolean> {
  const result = await runner.run("ip", ["link", "show", "dev", name]);
  return result.code === 0;
}

/**
 * Makes sure the WireGuard interface exists, has its key, port, MTU and addresses, and is up. Idempotent: an existing
 * interface is reconfigured, not recreated.
 */
export async function ensureInterface(
  runner: CommandRunner,
  options: InterfaceOptions,
): Promise<InterfaceResult> {
  checkName(options.name);
  const { name } = options;
  let result: InterfaceResult = { created: false };
  if (!(await interfaceExists(runner, name))) {
    result = { created: true, backend: await createInterface(runner, name, options.backend) };
  }
  await runChecked(runner, "wg", [
    "set",
    name,
    "private-key",
    options.privateKeyPath,
    "listen-port",
    String(options.listenPort ?? 51820),
  ]);
  await runChecked(runner, "ip", ["link", "set", "dev", name, "mtu", String(options.mtu ?? 1420), "up"]);
  for (const address of options.addresses ?? []) {
    await runChecked(runner, "ip", [
      address.includes(":") ? "-6" : "-4",
      "address",
      "replace",
      address,
      "dev",
      name,
    ]);
  }
  return result;
}

async function createInterface(
  runner: CommandRunner,
  name: string,
  backend: WireGuardBackend | undefined,
): Promise<WireGuardBackend> {
  if (backend !== "wireguard-go") {
    const kernel = await runner.run("ip", ["link", "add", "dev", name, "type", "wireguard"]);
    if (kernel.code === 0) return "kernel";
    const missing = /unknown device type|not supported|no such device/i.test(kernel.stderr);
    if (backend === "kernel" || !missing) {
      throw new MeshError(
        "unavailable",
        `Cannot create WireGuard interface "${name}" (${runner.where}): ${kernel.stderr.trim()}`,
      );
    }
  }
  // wireguard-go refuses to run where the kernel module exists unless told otherwise; it only gets here without one.
  // Its own process group: the interface must outlive a daemon restart and a signal sent to the daemon's group.
  const spawned = await runner.run("wireguard-go", [name], {
    env: { WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD: "1" },
    detached: true,
  });
  if (spawned.code !== 0 || !(await interfaceExists(runner, name))) {
    throw new MeshError(
      "unavailable",
      `Cannot create WireGuard interface "${name}" with wireguard-go (${runner.where}): ${
        spawned.stderr.trim() || `exit code ${spawned.code}`
      }`,
    );
  }
  return "wireguard-go";
}

/** Deletes the interface if it exists (a `wireguard-go` process exits when its interface goes). */
export async function removeInterface(runner: CommandRunner, name: string): Promise<boolean> {
  checkName(name);
  if (!(await interfaceExists(runner, name))) return false;
  await runChecked(runner, "ip", ["link", "del", "dev", name]);
  return true;
}

/** One peer as the mesh wants it. */
export interface MeshPeer {
  /** The peer's WireGuard public key. */
  publicKey: string;
  /** Its Advertised Endpoints (`host:port`), preferred first. */
  endpoints: string[];
  /** Its allowed IPs: its Machine Subnet and its Management Address `/128`. */
  allowedIps: string[];
  /** Its persistent keepalive in seconds (0: off); default the {@link SetPeersOptions} one. */
  keepaliveSeconds?: number;
}

/** Options of {@link setPeers}. */
export interface SetPeersOptions {
  /** Persistent keepalive in seconds; default 25. */
  keepaliveSeconds?: number;
}

/**
 * Makes the interface's peers exactly `peers`: removes others, adds or updates these with their allowed IPs and
 * keepalive. A peer's endpoint is set only when the interface has none for it, or one outside its advertised list,
 * so an endpoint chosen by selection or adopted by roaming is kept.
 */
export async function setPeers(
  runner: CommandRunner,
  name: string,
  peers: readonly MeshPeer[],
  options: SetPeersOptions = {},
): Promise<void> {
  checkName(name);
  const current = new Map((await readPeers(runner, name)).map((p) => [p.publicKey, p]));
  const wanted = new Set(peers.map((p) => p.publicKey));
  const args = ["set", name];
  for (const key of current.keys()) if (!wanted.has(key)) args.push("peer", key, "remove");
  for (const peer of peers) {
    args.push("peer", peer.publicKey);
    const endpoint = current.get(peer.publicKey)?.endpoint;
    if (peer.endpoints.length > 0 && (endpoint === undefined || !peer.endpoints.includes(endpoint))) {
      args.push("endpoint", peer.endpoints[0]);
    }
    args.push("persistent-keepalive", String(peer.keepaliveSeconds ?? options.keepaliveSeconds ?? 25));
    args.push("allowed-ips", peer.allowedIps.join(","));
  }
  if (args.length > 2) await runChecked(runner, "wg", args);
}

/** Sets one peer's endpoint (endpoint selection's effect). */
export async function setPeerEndpoint(
  runner: CommandRunner,
  name: string,
  publicKey: string,
  endpoint: string,
): Promise<void> {
  await runChecked(runner, "wg", ["set", name, "peer", publicKey, "endpoint", endpoint]);
}

/** One peer as the interface reports it. */
export interface PeerReport {
  /** The peer's public key. */
  publicKey: string;
  /** The endpoint currently used, if any. */
  endpoint?: string;
  /** Allowed IPs. */
  allowedIps: string[];
  /** The latest handshake (ms since the epoch), if any. */
  latestHandshake?: number;
  /** Bytes received from the peer. */
  rxBytes: number;
  /** Bytes sent to the peer. */
  txBytes: number;
}

/**
 * Parses `wg show <if> dump`. The first line describes the interface and holds its private key, so it is dropped
 * unread; peer lines are `public-key preshared-key endpoint allowed-ips latest-handshake rx tx keepalive`.
 */
export function parseDump(text: string): PeerReport[] {
  const lines = text.split("\n").filter((l) => l.length > 0).slice(1);
  return lines.map((line) => {
    const f = line.split("\t");
    if (f.length < 8) {
      throw new MeshError(
        "internal",
        'Cannot parse the output of "wg show dump": a peer line has too few fields',
      );
    }
    const handshake = Number(f[4]);
    return {
      publicKey: f[0],
      endpoint: f[2] === "(none)" ? undefined : f[2],
      allowedIps: f[3] === "(none)" ? [] : f[3].split(","),
      latestHandshake: handshake > 0 ? handshake * 1000 : undefined,
      rxBytes: Number(f[5]),
      txBytes: Number(f[6]),
    };
  });
}

/** Reads every peer of the interface (`wg show <if> dump`). */
export async function readPeers(runner: CommandRunner, name: string): Promise<PeerReport[]> {
  checkName(name);
  return parseDump(await runChecked(runner, "wg", ["show", name, "dump"]));
}

/** The latest handshake per peer public key (ms since the epoch; absent when there was none). */
export async function readHandshakes(
  runner: CommandRunner,
  name: string,
): Promise<Map<string, number | undefined>> {
  return new Map((await readPeers(runner, name)).map((p) => [p.publicKey, p.latestHandshake]));
}

/** Options of {@link syncRoutes}. */
export interface RouteOptions {
  /** Source address for IPv4 routes: the Machine Gateway, so traffic from the Machine itself is inside its own
   * allowed IPs on the peer (WireGuard drops anything else). */
  src?: string;
}

/**
 * Makes the routes through the interface exactly `destinations` (peer Machine Subnets and Management Addresses);
 * removes other routes through it except the kernel's own.
 */
export async function syncRoutes(
  runner: CommandRunner,
  name: string,
  destinations: readonly string[],
  options: RouteOptions = {},
): Promise<void> {
  checkName(name);
  const wanted = new Set(destinations.map(normalizeRoute));
  for (const family of ["-4", "-6"]) {
    const text = await runChecked(runner, "ip", ["-j", family, "route", "show", "dev", name]);
    const routes = JSON.parse(text || "[]") as { dst: string; protocol?: string }[];
    for (const route of routes) {
      if (route.protocol === "kernel" || wanted.has(normalizeRoute(route.dst))) continue;
      await runChecked(runner, "ip", [family, "route", "del", route.dst, "dev", name]);
    }
  }
  for (const destination of wanted) {
    const v6 = destination.includes(":");
    const args = [v6 ? "-6" : "-4", "route", "replace", destination, "dev", name];
    if (!v6 && options.src !== undefined) args.push("src", options.src);
    await runChecked(runner, "ip", args);
  }
}

function normalizeRoute(destination: string): string {
  if (destination.includes("/")) return destination;
  return destination.includes(":") ? `${destination}/128` : `${destination}/32`;
}
