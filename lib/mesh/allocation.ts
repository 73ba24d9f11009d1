/**
 * Optimistic Machine Subnet allocation on the operator's side (docs/bets.md, bet 6). There is no allocator Machine: the
 * operator picks the lowest `/24` of the Cluster network that overlaps nothing it can see, where "see" is the union
 * of one observation (the `machines` rows an Entry Machine returned) and the operator's own durable allocation
 * history, which includes picks not yet visible in any observation.
 *
 * The caller must save the pick into its history BEFORE publishing it (Register, Join) and keep it after a failure;
 * history has no expiry and nothing here reclaims it. Two operators with different histories, or one working from a
 * partial observation, can still pick overlapping subnets; that risk is documented, not repaired.
 *
 * @module
 */

import { formatIpv4Network, type Ipv4Network, networksOverlap, parseIpv4Network } from "./cidr.ts";
import { type MachineSubnet, machineSubnets, parseClusterNetwork, parseMachineSubnet } from "./addressing.ts";
import { MeshError } from "./errors.ts";

/** One entry of the operator's allocation history (stored as JSON, so snake_case and open to new fields). */
export interface AllocationRecord {
  /** The picked Machine Subnet. */
  subnet: string;
  /** The Machine the pick was for, when known. */
  "machine_name"?: string;
  /** The Machine's WireGuard public key, when known. */
  "public_key"?: string;
  /** When the pick was saved (RFC 3339). */
  "allocated_at"?: string;
}

/** Something that claims a subnet: an observed Machine row or a history entry. */
export interface SubnetClaim {
  /** The claimed network, normally a `/24`. */
  subnet: string;
}

/** What {@link chooseSubnet} picked and what it could not read. */
export interface SubnetChoice extends MachineSubnet {
  /** Claims that were not IPv4 networks, so they could not be avoided; report them, they are evidence. */
  unreadable: string[];
}

/** Input to {@link chooseSubnet}. */
export interface ChooseSubnetInput {
  /** The Cluster network; default `10.210.0.0/16`. */
  network?: string;
  /** Subnets in the observation the operator just made. */
  observed: readonly SubnetClaim[];
  /** The operator's durable allocation history. */
  history: readonly SubnetClaim[];
}

/**
 * Picks the lowest Machine Subnet of the network that overlaps no observed or remembered claim. Throws `conflict`
 * when every `/24` is claimed.
 */
export function chooseSubnet(input: ChooseSubnetInput): SubnetChoice {
  const networkText = input.network ?? "10.210.0.0/16";
  parseClusterNetwork(networkText);
  const claims: Ipv4Network[] = [];
  const unreadable: string[] = [];
  for (const claim of [...input.observed, ...input.history]) {
    try {
      claims.push(parseIpv4Network(claim.subnet));
    } catch {
      unreadable.push(claim.subnet);
    }
  }
  for (const candidate of machineSubnets(networkText)) {
    const network = parseIpv4Network(candidate);
    if (claims.every((claim) => !networksOverlap(claim, network))) {
      return { ...parseMachineSubnet(formatIpv4Network(network)), unreadable };
    }
  }
  throw new MeshError(
    "conflict",
    `Cannot allocate a Machine Subnet in "${networkText}": every /24 is claimed ` +
      `(${input.observed.length} observed, ${input.history.length} in allocation history)`,
  );
}
