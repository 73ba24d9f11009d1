/**
 * Port publications:
 *
 * - `x-ports: "[hostname:][lb_port:]port/http|https"` routes HTTP(S) through Caddy;
 * - `x-ports: "[ip:]published:port[/tcp|udp]@host"` publishes on the Machine's own address;
 * - standard `ports` are accepted only in host mode (`mode: host` in the long syntax), because there is no
 *   TCP/UDP routing mesh; the short syntax means ingress mode in Compose and is refused with a hint.
 *
 * Port ranges are refused. `ports` and `x-ports` cannot be combined.
 *
 * @module
 */

import { isIP } from "node:net";
import type { NormalizedPort } from "./types.ts";

/** A parse result: the value, or why the text was refused. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

const TRANSPORT_INGRESS =
  'TCP/UDP ingress is not supported: publish on the Machine instead (x-ports "8080:80/tcp@host" or long syntax with mode: host)';
const DNS_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

function ok<T>(value: T): Parsed<T> {
  return { ok: true, value };
}

function err<T>(error: string): Parsed<T> {
  return { ok: false, error };
}

/** Splits `a:b:c` into at most three parts; anything before the last two stays together (IPv6 hosts). */
function splitParts(value: string): string[] {
  const parts = value.split(":");
  if (parts.length <= 3) return parts;
  return [parts.slice(0, -2).join(":"), ...parts.slice(-2)];
}

/** Parses a port number 1-65535; refuses ranges. */
export function parsePortNumber(text: string, kind: string): Parsed<number> {
  if (/^\d+-\d+$/.test(text)) return err(`port ranges are not supported: "${text}"`);
  if (!/^\d{1,5}$/.test(text)) {
    return err(`invalid ${kind} port "${text}": expected a number from 1 to 65535`);
  }
  const port = Number(text);
  if (port < 1 || port > 65535) {
    return err(`invalid ${kind} port "${text}": expected a number from 1 to 65535`);
  }
  return ok(port);
}

/** Parses a bind address: empty/`0.0.0.0`/`::` mean every address (null); otherwise an IP or CIDR prefix. */
export function parseHostIp(text: string | undefined): Parsed<string | null> {
  if (text === undefined || text === "" || text === "0.0.0.0" || text === "::" || text === "[::]") {
    return ok(null);
  }
  const bare = text.replace(/^\[([^\]]*)\]/, "$1");
  const [address, bits, extra] = bare.split("/");
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return err(`invalid host IP "${text}"`);
  if (bits !== undefined) {
    const max = family === 4 ? 32 : 128;
    if (!/^\d{1,3}$/.test(bits) || Number(bits) > max) return err(`invalid host IP prefix "${text}"`);
  }
  return ok(bare);
}

function transport(protocol: string): Parsed<"tcp" | "udp"> {
  if (protocol === "tcp" || protocol === "udp") return ok(protocol);
  return err(`unsupported protocol "${protocol}": expected "tcp" or "udp"`);
}

function ingressHostname(text: string): Parsed<string | null> {
  if (text === "") return ok(null);
  const labels = text.split(".");
  if (text.length <= 253 && labels.every((label) => DNS_LABEL.test(label))) return ok(text);
  return err(`invalid ingress hostname "${text}": expected lowercase DNS labels separated by "."`);
}

/** Parses one `x-ports` entry. */
export function parseExtensionPort(value: string): Parsed<NormalizedPort> {
  const expected = `expected [HOSTNAME:][LB_PORT:]PORT/http|https or [IP:]PUBLISHED:PORT[/tcp|udp]@host`;
  if (value === "") return err(`invalid port "": ${expected}`);
  const ats = value.split("@").length - 1;
  if (ats > 1) return err(`invalid port "${value}": too many "@"`);
  const hostMode = value.endsWith("@host");
  if (ats === 1 && !hostMode) return err(`invalid port mode in "${value}": expected "@host"`);
  const body = hostMode ? value.slice(0, -"@host".length) : value;
  const parts = splitParts(body);
  const last = parts[parts.length - 1];
  const slash = last.lastIndexOf("/");
  const targetText = slash < 0 ? last : last.slice(0, slash);
  const protocol = slash < 0 ? "tcp" : last.slice(slash + 1);
  const target = parsePortNumber(targetText, "container");
  if (!target.ok) return err(`invalid port "${value}": ${target.error}`);
  if (hostMode) {
    if (parts.length < 2) {
      return err(`invalid host port "${value}": a published port is required: ${expected}`);
    }
    const proto = transport(protocol);
    if (!proto.ok) return err(`invalid port "${value}": ${proto.error}`);
    const published = parsePortNumber(parts[parts.length - 2], "published");
    if (!published.ok) return err(`invalid port "${value}": ${published.error}`);
    const hostIp = parseHostIp(parts.length === 3 ? parts[0] : undefined);
    if (!hostIp.ok) return err(`invalid port "${value}": ${hostIp.error}`);
    return ok({
      kind: "host",
      hostIp: hostIp.value,
      publishedPort: published.value,
      containerPort: target.value,
      protocol: proto.value,
    });
  }
  if (protocol === "tcp" || protocol === "udp") return err(`invalid port "${value}": ${TRANSPORT_INGRESS}`);
  if (protocol !== "http" && protocol !== "https") {
    return err(`invalid port "${value}": unsupported protocol "${protocol}": ${expected}`);
  }
  let hostname = "";
  let lbPort: number | null = null;
  if (parts.length === 2) {
    if (/^\d+$/.test(parts[0])) {
      const published = parsePortNumber(parts[0], "load balancer");
      if (!published.ok) return err(`invalid port "${value}": ${published.error}`);
      lbPort = published.value;
    } else {
      hostname = parts[0];
    }
  } else if (parts.length === 3) {
    hostname = parts[0];
    const published = parsePortNumber(parts[1], "load balancer");
    if (!published.ok) return err(`invalid port "${value}": ${published.error}`);
    lbPort = published.value;
  }
  const host = ingressHostname(hostname);
  if (!host.ok) return err(`invalid port "${value}": ${host.error}`);
  return ok({
    kind: "ingress",
    hostname: host.value,
    loadBalancerPort: lbPort ?? (protocol === "https" ? 443 : 80),
    containerPort: target.value,
    protocol,
  });
}

/** The parts of a Compose short-syntax port, `[IP:][PUBLISHED:]TARGET[/PROTO]`. */
export interface ShortPort {
  hostIp: string | null;
  published: number | null;
  target: number;
  protocol: "tcp" | "udp";
}

/** Parses a Compose short-syntax port without judging its mode. */
export function parseShortPort(value: string): Parsed<ShortPort> {
  const expected = "expected [IP:][HOST:]CONTAINER[/tcp|udp]";
  const slash = value.lastIndexOf("/");
  const hasProtocol = slash >= 0 && !value.slice(slash + 1).includes(":");
  const body = hasProtocol ? value.slice(0, slash) : value;
  const proto = transport(hasProtocol ? value.slice(slash + 1) : "tcp");
  if (!proto.ok) return err(`invalid port "${value}": ${proto.error}`);
  if (body === "") return err(`invalid port "${value}": ${expected}`);
  const parts = splitParts(body);
  const target = parsePortNumber(parts[parts.length - 1], "container");
  if (!target.ok) return err(`invalid port "${value}": ${target.error}: ${expected}`);
  let published: number | null = null;
  if (parts.length >= 2 && parts[parts.length - 2] !== "") {
    const parsed = parsePortNumber(parts[parts.length - 2], "published");
    if (!parsed.ok) return err(`invalid port "${value}": ${parsed.error}: ${expected}`);
    published = parsed.value;
  }
  const hostIp = parseHostIp(parts.length === 3 ? parts[0] : undefined);
  if (!hostIp.ok) return err(`invalid port "${value}": ${hostIp.error}: ${expected}`);
  return ok({ hostIp: hostIp.value, published, target: target.value, protocol: proto.value });
}

/** Turns a standard `ports` entry into a host publication, refusing ingress mode. */
export function standardPort(port: ShortPort, mode: string, original: string): Parsed<NormalizedPort> {
  if (mode === "ingress") return err(`port "${original}" uses ingress mode: ${TRANSPORT_INGRESS}`);
  if (mode !== "host") return err(`invalid port mode "${mode}": expected "host" or "ingress"`);
  if (port.published === null) return err(`port "${original}": a published port is required in host mode`);
  return ok({
    kind: "host",
    hostIp: port.hostIp,
    publishedPort: port.published,
    containerPort: port.target,
    protocol: port.protocol,
  });
}

/** Writes a publication back in `x-ports` syntax; parsing the result gives the same publication. */
export function formatExtensionPort(port: NormalizedPort): string {
  if (port.kind === "host") {
    const ip = port.hostIp === null ? "" : `${port.hostIp.includes(":") ? `[${port.hostIp}]` : port.hostIp}:`;
    return `${ip}${port.publishedPort}:${port.containerPort}/${port.protocol}@host`;
  }
  const host = port.hostname === null ? "" : `${port.hostname}:`;
  return `${host}${port.loadBalancerPort}:${port.containerPort}/${port.protocol}`;
}
