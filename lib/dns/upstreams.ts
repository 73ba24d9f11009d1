import { isIPv4 } from "./ip.ts";
import { formatHostPort, type HostPort, parseHostPort } from "./spec.ts";

/** The `nameserver` addresses of a resolv.conf text, in order. */
export function resolvConfNameservers(text: string): string[] {
  const servers: string[] = [];
  for (const line of text.split("\n")) {
    const words = line.replace(/[#;].*$/, "").trim().split(/\s+/);
    if (words[0] === "nameserver" && words[1]) servers.push(words[1]);
  }
  return servers;
}

/** The upstreams to forward to, and what was left out and why. */
export interface UpstreamChoice {
  /** Servers to try in order. */
  upstreams: HostPort[];
  /** One line per server left out. */
  ignored: string[];
}

/**
 * Picks the forwarding servers: the spec's `upstreams` when present, else the host's resolv.conf nameservers
 * (port 53). A server that is one of our own listen addresses is left out, so DNS never forwards to itself; IPv6
 * servers are left out because the dns permission set grants IPv4 port 53 only.
 */
export function chooseUpstreams(
  specUpstreams: string[] | undefined,
  resolvConf: string | undefined,
  listen: HostPort[],
): UpstreamChoice {
  const candidates = specUpstreams ?? resolvConfNameservers(resolvConf ?? "");
  const own = new Set(listen.map(formatHostPort));
  const upstreams: HostPort[] = [];
  const ignored: string[] = [];
  for (const text of candidates) {
    const hostPort = parseHostPort(text, 53);
    if (!hostPort) {
      ignored.push(`upstream "${text}" is not an IP address`);
    } else if (own.has(formatHostPort(hostPort))) {
      ignored.push(`upstream "${text}" is this DNS server itself`);
    } else if (!isIPv4(hostPort.hostname)) {
      ignored.push(`upstream "${text}" is IPv6, which is not supported yet`);
    } else if (!upstreams.some((u) => formatHostPort(u) === formatHostPort(hostPort))) {
      upstreams.push(hostPort);
    }
  }
  return { upstreams, ignored };
}
