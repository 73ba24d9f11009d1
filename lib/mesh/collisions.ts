/**
 * Subnet collisions: two Machine rows whose subnets overlap. Optimistic allocation (bet 6) makes them possible when
 * two operators add Machines from observations that do not include each other's picks; they are reported wherever
 * Machines are listed, never repaired.
 *
 * @module
 */

import { networksOverlap, parseIpv4Network } from "./cidr.ts";

/** A Machine row as collision detection needs it. */
export interface SubnetHolder {
  /** Machine id. */
  id: string;
  /** Machine Name. */
  name: string;
  /** Its subnet, if any. */
  subnet?: string;
}

/** One collision: a subnet and every Machine whose subnet overlaps it. */
export interface SubnetCollision {
  /** The first holder's subnet. */
  subnet: string;
  /** Every Machine overlapping it (two or more), in input order. */
  machines: { id: string; name: string; subnet: string }[];
}

/** Groups Machines whose subnets overlap; each group is reported once. */
export function subnetCollisions(holders: readonly SubnetHolder[]): SubnetCollision[] {
  const parsed = holders.flatMap((h) => {
    if (h.subnet === undefined) return [];
    try {
      return [{ holder: h, subnet: h.subnet, network: parseIpv4Network(h.subnet) }];
    } catch {
      return [];
    }
  });
  const taken = new Set<number>();
  const out: SubnetCollision[] = [];
  for (let i = 0; i < parsed.length; i++) {
    if (taken.has(i)) continue;
    const group = [i];
    for (let j = i + 1; j < parsed.length; j++) {
      if (!taken.has(j) && networksOverlap(parsed[i].network, parsed[j].network)) group.push(j);
    }
    if (group.length < 2) continue;
    group.forEach((k) => taken.add(k));
    out.push({
      subnet: parsed[i].subnet,
      machines: group.map((k) => ({
        id: parsed[k].holder.id,
        name: parsed[k].holder.name,
        subnet: parsed[k].subnet,
      })),
    });
  }
  return out;
}
