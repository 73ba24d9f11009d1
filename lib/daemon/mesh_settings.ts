/**
 * How `ployzd serve` joins the mesh, read from the environment:
 *
 * - `PLOYZ_WG_INTERFACE`: the WireGuard interface; `none` runs without a mesh. Default `ployz0`, but only for the
 *   installed layout: a relocated data directory (tests, the lab, several Machines on one host) must name its own,
 *   because a `wireguard-go` interface's UAPI socket path is host-wide and two daemons must never share one.
 * - `PLOYZ_WG_PORT`: the UDP port (default 51820).
 * - `PLOYZ_ADVERTISE_ENDPOINTS`: `host:port,…` peers use to reach this Machine; default every non-loopback IPv4
 *   address of the host with the WireGuard port.
 * - `PLOYZ_MEMBERSHIP_HANDSHAKE_UP_MS`, `PLOYZ_MEMBERSHIP_STORE_UP_MS`, `PLOYZ_MEMBERSHIP_DOWN_AFTER_MS`:
 *   membership thresholds (see lib/mesh's membership).
 * - `PLOYZ_MESH_TICK_MS`: how often the interface is read for handshakes and endpoint selection steps (default
 *   5000); `PLOYZ_SYNC_INTERVAL_MS`: mean anti-entropy interval (default 1000).
 *
 * @module
 */

import {
  type CommandRunner,
  DEFAULT_CLUSTER_NETWORK,
  DEFAULT_MEMBERSHIP_THRESHOLDS,
  type MembershipThresholds,
  parseEndpoints,
} from "../mesh/mod.ts";

/** The port Machine-to-Machine HTTP (store sync) listens on, on the Machine Gateway. */
export const SYNC_PORT = 51000;

/** How the daemon takes part in the mesh. */
export interface MeshSettings {
  /** The WireGuard interface name. */
  interfaceName: string;
  /** The WireGuard UDP port. */
  listenPort: number;
  /** Explicit Advertised Endpoints; `undefined` derives them from the host's addresses. */
  advertiseEndpoints?: string[];
  /** The Cluster network. */
  clusterNetwork: string;
  /** Membership thresholds. */
  thresholds: MembershipThresholds;
  /** Interface read period (handshakes, endpoint selection, retries after a failure). */
  tickMs: number;
  /** Mean anti-entropy interval. */
  antiEntropyMs: number;
  /** Where `ip`, `wg`, `wireguard-go` and `iptables` run; default the host (the daemon's own namespace). */
  runner?: CommandRunner;
}

function positive(get: (key: string) => string | undefined, key: string, fallback: number): number {
  const text = get(key);
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) {
    throw new TypeError(`Invalid ${key} "${text}": expected a positive number`);
  }
  return value;
}

/**
 * Reads the mesh settings; `undefined` when the mesh is off (`PLOYZ_WG_INTERFACE=none`, or a relocated data
 * directory without `PLOYZ_WG_INTERFACE`).
 */
export function meshSettingsFromEnv(
  get: (key: string) => string | undefined,
  options: { defaultLayout: boolean },
): MeshSettings | undefined {
  const named = get("PLOYZ_WG_INTERFACE");
  if (named === "none" || ((named === undefined || named === "") && !options.defaultLayout)) return undefined;
  const interfaceName = named === undefined || named === "" ? "ployz0" : named;
  const listenPort = positive(get, "PLOYZ_WG_PORT", 51820);
  const advertised = get("PLOYZ_ADVERTISE_ENDPOINTS");
  return {
    interfaceName,
    listenPort,
    advertiseEndpoints: advertised === undefined || advertised === ""
      ? undefined
      : parseEndpoints(advertised),
    clusterNetwork: DEFAULT_CLUSTER_NETWORK,
    thresholds: {
      handshakeUpMs: positive(
        get,
        "PLOYZ_MEMBERSHIP_HANDSHAKE_UP_MS",
        DEFAULT_MEMBERSHIP_THRESHOLDS.handshakeUpMs,
      ),
      storeUpMs: positive(get, "PLOYZ_MEMBERSHIP_STORE_UP_MS", DEFAULT_MEMBERSHIP_THRESHOLDS.storeUpMs),
      downAfterMs: positive(get, "PLOYZ_MEMBERSHIP_DOWN_AFTER_MS", DEFAULT_MEMBERSHIP_THRESHOLDS.downAfterMs),
    },
    tickMs: positive(get, "PLOYZ_MESH_TICK_MS", 5000),
    antiEntropyMs: positive(get, "PLOYZ_SYNC_INTERVAL_MS", 1000),
  };
}
