/**
 * IPv4 addresses and CIDR networks as unsigned 32-bit numbers, and IPv6 text in RFC 5952 form.
 *
 * @module
 */

import { MeshError } from "./errors.ts";

/** An IPv4 network: its first address as an unsigned 32-bit number and its prefix length. */
export interface Ipv4Network {
  /** The network address (host bits zero). */
  address: number;
  /** The prefix length, 0 to 32. */
  prefix: number;
}

/** Parses dotted-quad IPv4 text into an unsigned 32-bit number. */
export function parseIpv4(text: string): number {
  const parts = text.split(".");
  if (parts.length !== 4 || parts.some((p) => !/^(0|[1-9]\d{0,2})$/.test(p) || Number(p) > 255)) {
    throw new MeshError("invalid_argument", `Cannot parse IPv4 address "${text}"`);
  }
  return parts.reduce((acc, p) => acc * 256 + Number(p), 0);
}

/** Formats an unsigned 32-bit number as dotted-quad IPv4 text. */
export function formatIpv4(value: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join(".");
}

function maskOf(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

/**
 * Parses `a.b.c.d/n`. Host bits must be zero, so a typo such as `10.210.0.1/16` is refused with the network the
 * operator probably meant.
 */
export function parseIpv4Network(text: string): Ipv4Network {
  const match = /^([^/]+)\/(\d{1,2})$/.exec(text);
  if (match === null) {
    throw new MeshError("invalid_argument", `Cannot parse network "${text}": expected "a.b.c.d/prefix"`);
  }
  const prefix = Number(match[2]);
  if (prefix > 32 || (match[2].length > 1 && match[2].startsWith("0"))) {
    throw new MeshError("invalid_argument", `Cannot parse network "${text}": prefix must be 0 to 32`);
  }
  let address: number;
  try {
    address = parseIpv4(match[1]);
  } catch {
    throw new MeshError(
      "invalid_argument",
      `Cannot parse network "${text}": "${match[1]}" is not an IPv4 address`,
    );
  }
  const network = (address & maskOf(prefix)) >>> 0;
  if (network !== address) {
    throw new MeshError(
      "invalid_argument",
      `Cannot parse network "${text}": host bits are set (the network is "${formatIpv4(network)}/${prefix}")`,
    );
  }
  return { address, prefix };
}

/** Formats a network as `a.b.c.d/n`. */
export function formatIpv4Network(network: Ipv4Network): string {
  return `${formatIpv4(network.address)}/${network.prefix}`;
}

/** Whether `address` lies inside `network`. */
export function networkContains(network: Ipv4Network, address: number): boolean {
  return ((address & maskOf(network.prefix)) >>> 0) === network.address;
}

/** Whether two networks share any address (one then contains the other). */
export function networksOverlap(a: Ipv4Network, b: Ipv4Network): boolean {
  return networkContains(a, b.address) || networkContains(b, a.address);
}

/** Formats 16 bytes as IPv6 text in RFC 5952 form: lowercase, no leading zeros, the longest zero run as `::`. */
export function formatIpv6(bytes: Uint8Array): string {
  if (bytes.length !== 16) {
    throw new MeshError("internal", `Cannot format IPv6 address: expected 16 bytes, got ${bytes.length}`);
  }
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(bytes[i] * 256 + bytes[i + 1]);
  let bestStart = -1;
  let bestLength = 1; // a single zero group is never compressed (RFC 5952 §4.2.2)
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLength).join(":")}`;
}
