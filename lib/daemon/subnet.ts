/**
 * A Machine's container subnet: an IPv4 /24 whose `.1` is the bridge gateway.
 *
 * @module
 */

/**
 * The private IPv4 ranges (RFC 1918) a Machine subnet may lie in. deno.json's `serve` set reaches peers on :51000
 * and its `dns` set answers containers only inside these, so found and join refuse a subnet anywhere else.
 */
export const PRIVATE_RANGES: readonly string[] = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"];

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

/** Whether a parsed Machine subnet lies in one of {@linkcode PRIVATE_RANGES}. */
export function inPrivateRange(subnet: MachineSubnet): boolean {
  const [a, b] = subnet.subnet.split(".").map(Number);
  return a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168);
}
