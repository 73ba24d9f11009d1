/**
 * Which replicated `machines` rows (and peer hints) this Machine can turn into WireGuard peers, routes and sync
 * targets. Rows come from other Machines and are untrusted input: a row that cannot be used is skipped with a
 * reason, never thrown on, so one bad row cannot stop peer updates, anti-entropy or the daemon.
 *
 * @module
 */

import { parseClusterNetwork, parseMachineSubnet } from "./addressing.ts";
import { networksOverlap, parseIpv4Network } from "./cidr.ts";
import { isWireGuardKey } from "./keys.ts";
import { messageOf } from "../util/mod.ts";

/** A row or hint offered as a peer. */
export interface PeerCandidate {
  /** Its Machine id. */
  machineId: string;
  /** Its WireGuard public key, if the row names one. */
  publicKey?: unknown;
  /** Its Machine Subnet, if the row names one. */
  subnet?: unknown;
  /** Its Advertised Endpoints, if the row names any. */
  endpoints?: unknown;
}

/** A candidate that can be used as it is. */
export interface UsablePeer {
  /** Its Machine id. */
  machineId: string;
  /** Its WireGuard public key. */
  publicKey: string;
  /** Its Machine Subnet, normalised. */
  subnet: string;
  /** Its Advertised Endpoints that are well formed. */
  endpoints: string[];
}

/** The verdict on every candidate. */
export interface PeerRowVerdict {
  /** Candidates to configure. */
  peers: UsablePeer[];
  /** Candidates skipped, each with why. */
  skipped: { machineId: string; reason: string }[];
}

const ENDPOINT = /^(?:\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

function subnetOf(value: unknown, clusterNetwork: string): string {
  if (typeof value !== "string") throw new Error("its row names no subnet");
  let subnet: string;
  try {
    subnet = parseMachineSubnet(value).subnet;
  } catch {
    throw new Error(`its subnet "${value.slice(0, 64)}" is not an IPv4 /24`);
  }
  const network = parseClusterNetwork(clusterNetwork);
  const own = parseIpv4Network(subnet);
  if (own.address < network.address || own.address >= network.address + 2 ** (32 - network.prefix)) {
    throw new Error(`its subnet ${subnet} lies outside the Cluster network ${clusterNetwork}`);
  }
  return subnet;
}

/**
 * Sorts candidates into usable peers and skipped ones: a usable one has a WireGuard key, a /24 inside the Cluster
 * network that overlaps neither this Machine's subnet nor another candidate's, and keeps only its well-formed
 * endpoints. Of candidates claiming one subnet, the incumbent (the Machine configured with it now) keeps it and the
 * newcomers are skipped; with no incumbent all are skipped, so a later claim never takes over a live Machine's
 * route. Candidates after the first with the same key are skipped.
 */
export function usablePeers(
  candidates: readonly PeerCandidate[],
  options: {
    selfId: string;
    ownSubnet: string;
    clusterNetwork: string;
    /** Machine configured with each subnet now. */
    incumbents?: ReadonlyMap<string, string>;
  },
): PeerRowVerdict {
  const skipped: { machineId: string; reason: string }[] = [];
  const maybe: UsablePeer[] = [];
  const keys = new Set<string>();
  for (const c of candidates) {
    if (c.machineId === options.selfId) continue;
    try {
      if (typeof c.publicKey !== "string" || !isWireGuardKey(c.publicKey)) {
        throw new Error("its WireGuard key is missing or not a base64 32-byte key");
      }
      const subnet = subnetOf(c.subnet, options.clusterNetwork);
      if (networksOverlap(parseIpv4Network(subnet), parseIpv4Network(options.ownSubnet))) {
        throw new Error(`its subnet ${subnet} is this Machine's own`);
      }
      if (keys.has(c.publicKey)) throw new Error("another Machine has the same WireGuard key");
      keys.add(c.publicKey);
      const endpoints = Array.isArray(c.endpoints)
        ? c.endpoints.filter((e): e is string =>
          typeof e === "string" && e.length <= 256 && ENDPOINT.test(e) &&
          Number(ENDPOINT.exec(e)![1]) <= 65535
        )
        : [];
      maybe.push({ machineId: c.machineId, publicKey: c.publicKey, subnet, endpoints });
    } catch (error) {
      skipped.push({
        machineId: c.machineId,
        reason: messageOf(error),
      });
    }
  }
  const peers: UsablePeer[] = [];
  for (const p of maybe) {
    const clash = maybe.find((q) => q !== p && q.subnet === p.subnet);
    const incumbent = options.incumbents?.get(p.subnet);
    if (clash === undefined || incumbent === p.machineId) {
      peers.push(p);
      continue;
    }
    const holder = incumbent !== undefined && maybe.some((q) => q.machineId === incumbent)
      ? incumbent
      : clash.machineId;
    skipped.push({ machineId: p.machineId, reason: `its subnet ${p.subnet} is also claimed by "${holder}"` });
  }
  return { peers, skipped };
}

/** A Machine retired while gone, kept as a quarantined WireGuard peer so it can be told it was removed. */
export interface QuarantinedPeer {
  /** Its Machine id. */
  machineId: string;
  /** Its WireGuard public key. */
  publicKey: string;
  /** The one address it is allowed to send from: its Machine Gateway as a /32 (never its Machine Subnet). */
  address: string;
}

/**
 * The quarantined peers of retired Machines: each with a usable key and a /24 inside the Cluster network, allowed
 * only its Machine Gateway (the source of its own store sync and Machine RPC), so none of its containers' traffic
 * is accepted and no route to its containers exists. A retired Machine whose key a live peer (or this Machine)
 * holds now is left out: the live one keeps the key.
 */
export function quarantinedPeers(
  retired: readonly PeerCandidate[],
  options: { selfId: string; clusterNetwork: string; liveKeys: ReadonlySet<string>; ownKey?: string },
): QuarantinedPeer[] {
  const out: QuarantinedPeer[] = [];
  const keys = new Set<string>();
  for (const c of retired) {
    if (c.machineId === options.selfId || typeof c.publicKey !== "string" || !isWireGuardKey(c.publicKey)) {
      continue;
    }
    if (options.liveKeys.has(c.publicKey) || c.publicKey === options.ownKey || keys.has(c.publicKey)) {
      continue;
    }
    let subnet: string;
    try {
      subnet = subnetOf(c.subnet, options.clusterNetwork);
    } catch {
      continue;
    }
    keys.add(c.publicKey);
    out.push({
      machineId: c.machineId,
      publicKey: c.publicKey,
      address: `${parseMachineSubnet(subnet).gateway}/32`,
    });
  }
  return out;
}
