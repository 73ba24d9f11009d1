/**
 * Advertised Endpoints: where peers reach this Machine's WireGuard port. An explicit list (`host:port,…`) wins;
 * otherwise every non-loopback, non-link-local IPv4 address of the host's own interfaces, skipping container
 * bridges, veths, WireGuard interfaces and anything inside the Cluster network (those are mesh addresses, not
 * underlay ones).
 *
 * @module
 */

import { networkContains, parseIpv4, parseIpv4Network } from "./cidr.ts";
import { MeshError } from "./errors.ts";

/** One interface address, as `Deno.networkInterfaces()` reports it. */
export interface InterfaceAddress {
  /** Interface name. */
  name: string;
  /** `IPv4` or `IPv6`. */
  family: string;
  /** The address. */
  address: string;
}

const ENDPOINT = /^(?:\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

/** Parses `host:port,host:port`; refuses anything else, naming it. */
export function parseEndpoints(text: string): string[] {
  const endpoints = text.split(",").map((s) => s.trim()).filter((s) => s !== "");
  for (const endpoint of endpoints) {
    const match = ENDPOINT.exec(endpoint);
    const port = Number(match?.[1]);
    if (match === null || port < 1 || port > 65535) {
      throw new MeshError("invalid_argument", `Invalid endpoint "${endpoint}": expected host:port`);
    }
  }
  return endpoints;
}

const SKIPPED = /^(lo|docker\d*|br-|veth|wg|ployz|plz|virbr|cni|flannel)/;

/** The default Advertised Endpoints from the host's interface addresses. */
export function defaultEndpoints(
  addresses: readonly InterfaceAddress[],
  options: { port: number; clusterNetwork: string; skipInterfaces?: string[] },
): string[] {
  const cluster = parseIpv4Network(options.clusterNetwork);
  const linkLocal = parseIpv4Network("169.254.0.0/16");
  const loopback = parseIpv4Network("127.0.0.0/8");
  const out: string[] = [];
  for (const a of addresses) {
    if (a.family !== "IPv4" || SKIPPED.test(a.name) || options.skipInterfaces?.includes(a.name)) continue;
    const ip = parseIpv4(a.address);
    if ([cluster, linkLocal, loopback].some((n) => networkContains(n, ip))) continue;
    const endpoint = `${a.address}:${options.port}`;
    if (!out.includes(endpoint)) out.push(endpoint);
  }
  return out;
}
