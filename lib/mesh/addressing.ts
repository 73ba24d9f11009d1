/**
 * Cluster addressing: a Cluster network (default `10.210.0.0/16`) split into one `/24` Machine
 * Subnet per Machine, whose `.1` is the Machine Gateway (the Machine's Docker bridge), and a Management Address per
 * Machine: `fdcc:` followed by the first 14 bytes of its WireGuard public key, so any Machine can derive a peer's
 * address from its key alone and a key change always changes the address.
 *
 * @module
 */

import {
  formatIpv4,
  formatIpv4Network,
  formatIpv6,
  type Ipv4Network,
  networkContains,
  parseIpv4Network,
} from "./cidr.ts";
import { MeshError } from "./errors.ts";
import { parsePublicKey } from "./keys.ts";

/** The Cluster network when the operator names none. */
export const DEFAULT_CLUSTER_NETWORK = "10.210.0.0/16";

/** The network every Management Address lies in. */
export const MANAGEMENT_NETWORK = "fdcc::/16";

/** A Machine Subnet and its Machine Gateway. */
export interface MachineSubnet {
  /** `a.b.c.0/24`. */
  subnet: string;
  /** `a.b.c.1`: the Docker bridge's address and the source of the Machine's own mesh traffic. */
  gateway: string;
}

/** Parses a Cluster network; it must be IPv4 with a prefix of /24 or shorter so it holds whole Machine Subnets. */
export function parseClusterNetwork(text: string): Ipv4Network {
  const network = parseIpv4Network(text);
  if (network.prefix > 24) {
    throw new MeshError(
      "invalid_argument",
      `Cannot use Cluster network "${text}": it must hold a /24 (prefix 24 or shorter)`,
    );
  }
  return network;
}

/** Parses a Machine Subnet: an IPv4 `/24`. */
export function parseMachineSubnet(text: string): MachineSubnet {
  const network = parseIpv4Network(text);
  if (network.prefix !== 24) {
    throw new MeshError("invalid_argument", `Cannot use Machine Subnet "${text}": it must be a /24`);
  }
  return { subnet: formatIpv4Network(network), gateway: formatIpv4(network.address + 1) };
}

/** Every Machine Subnet of a Cluster network, lowest first. */
export function machineSubnets(clusterNetwork: string): string[] {
  const network = parseClusterNetwork(clusterNetwork);
  const count = 2 ** (24 - network.prefix);
  const subnets: string[] = [];
  for (let i = 0; i < count; i++) subnets.push(`${formatIpv4(network.address + i * 256)}/24`);
  return subnets;
}

/**
 * The Cluster network a Machine's peers' subnets must lie in: `configured` when it holds `ownSubnet`, else (a
 * Cluster founded on another network with `machine init --subnet`) the /16 around `ownSubnet`.
 */
export function clusterNetworkOf(ownSubnet: string, configured: string = DEFAULT_CLUSTER_NETWORK): string {
  try {
    if (subnetInNetwork(ownSubnet, configured)) return configured;
    const own = parseIpv4Network(ownSubnet);
    return formatIpv4Network({ address: (own.address & 0xffff0000) >>> 0, prefix: 16 });
  } catch {
    return configured;
  }
}

/** Whether a Machine Subnet lies inside a Cluster network. */
export function subnetInNetwork(subnet: string, clusterNetwork: string): boolean {
  return networkContains(
    parseClusterNetwork(clusterNetwork),
    parseIpv4Network(parseMachineSubnet(subnet).subnet).address,
  );
}

/** The Management Address of the Machine with this WireGuard public key: `fdcc:` + the key's first 14 bytes. */
export function managementAddress(publicKey: string): string {
  const key = parsePublicKey(publicKey);
  const bytes = new Uint8Array(16);
  bytes[0] = 0xfd;
  bytes[1] = 0xcc;
  bytes.set(key.subarray(0, 14), 2);
  return formatIpv6(bytes);
}

/** What a peer's WireGuard `allowed-ips` holds: its Machine Subnet and its Management Address. */
export function peerAllowedIps(subnet: string, publicKey: string): string[] {
  return [parseMachineSubnet(subnet).subnet, `${managementAddress(publicKey)}/128`];
}
