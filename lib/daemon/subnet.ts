/**
 * A Machine's container subnet: an IPv4 /24 whose `.1` is the bridge gateway.
 *
 * @module
 */

/** The subnet `init` picks when none is given. */
export const DEFAULT_SUBNET = "10.210.1.0/24";

/** A parsed Machine subnet. */
export interface MachineSubnet {
  /** `a.b.c.0/24`. */
  subnet: string;
  /** `a.b.c.1`. */
  gateway: string;
}

/** Parses `a.b.c.0/24`; `undefined` for anything else. */
export function parseSubnet(text: string): MachineSubnet | undefined {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.0\/24$/.exec(text);
  if (match === null) return undefined;
  const octets = match.slice(1, 4).map(Number);
  if (octets.some((o) => o > 255) || match.slice(1, 4).some((o) => o.length > 1 && o.startsWith("0"))) {
    return undefined;
  }
  const base = octets.join(".");
  return { subnet: `${base}.0/24`, gateway: `${base}.1` };
}
