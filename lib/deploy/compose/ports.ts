/**
 * Port publications:
 *
 * - `x-ports: "[hostname:][lb_port:]port[/http|/https]"` routes HTTP(S) through Caddy (https when no protocol);
 * - `x-ports: "[ip:]published:port[/tcp|udp]@host"` publishes on the Machine's own address;
 * - standard `ports`, short and long syntax, publish on the host of each Machine that runs a replica, which is
 *   what they mean to `docker compose up` on one host; only an explicit `mode: ingress` (Swarm's routing mesh,
 *   which Ployz does not have) is refused. Ranges (`8000-8002:8000-8002`) publish each port; a port without a
 *   published one gets an ephemeral host port, as Docker gives it.
 *
 * `ports` and `x-ports` cannot be combined.
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
  // An ingress route without a protocol is https, as in Uncloud; a host port without one is tcp, as in Compose.
  const protocol = slash < 0 ? (hostMode ? "tcp" : "https") : last.slice(slash + 1);
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

/** The parts of a Compose short-syntax port, `[IP:][PUBLISHED:]TARGET[/PROTO]`; `published` null: ephemeral. */
export interface ShortPort {
  hostIp: string | null;
  published: number | null;
  target: number;
  protocol: "tcp" | "udp";
}

/** Most ports one range may publish. */
const MAX_RANGE = 1000;

function portRange(text: string, kind: string): Parsed<[number, number]> {
  const dash = /^(\d{1,5})-(\d{1,5})$/.exec(text);
  if (dash === null) {
    const single = parsePortNumber(text, kind);
    return single.ok ? ok([single.value, single.value]) : single;
  }
  const low = parsePortNumber(dash[1], kind);
  if (!low.ok) return low;
  const high = parsePortNumber(dash[2], kind);
  if (!high.ok) return high;
  if (high.value < low.value) return err(`invalid ${kind} port range "${text}": the end is below the start`);
  if (high.value - low.value >= MAX_RANGE) {
    return err(`${kind} port range "${text}" spans more than ${MAX_RANGE} ports`);
  }
  return ok([low.value, high.value]);
}

/** Parses a Compose short-syntax port without judging its mode; a range gives one entry per port. */
export function parseShortPort(value: string): Parsed<ShortPort[]> {
  const expected = "expected [IP:][HOST:]CONTAINER[/tcp|udp]";
  const slash = value.lastIndexOf("/");
  const hasProtocol = slash >= 0 && !value.slice(slash + 1).includes(":");
  const body = hasProtocol ? value.slice(0, slash) : value;
  const proto = transport(hasProtocol ? value.slice(slash + 1) : "tcp");
  if (!proto.ok) return err(`invalid port "${value}": ${proto.error}`);
  if (body === "") return err(`invalid port "${value}": ${expected}`);
  const parts = splitParts(body);
  const target = portRange(parts[parts.length - 1], "container");
  if (!target.ok) return err(`invalid port "${value}": ${target.error}: ${expected}`);
  let published: [number, number] | null = null;
  if (parts.length >= 2 && parts[parts.length - 2] !== "") {
    const parsed = portRange(parts[parts.length - 2], "published");
    if (!parsed.ok) return err(`invalid port "${value}": ${parsed.error}: ${expected}`);
    published = parsed.value;
  }
  const hostIp = parseHostIp(parts.length === 3 ? parts[0] : undefined);
  if (!hostIp.ok) return err(`invalid port "${value}": ${hostIp.error}: ${expected}`);
  const count = target.value[1] - target.value[0] + 1;
  if (published !== null && published[1] - published[0] + 1 !== count) {
    return err(
      `invalid port "${value}": the published range and the container range must have the same length`,
    );
  }
  const out: ShortPort[] = [];
  for (let i = 0; i < count; i++) {
    out.push({
      hostIp: hostIp.value,
      published: published === null ? null : published[0] + i,
      target: target.value[0] + i,
      protocol: proto.value,
    });
  }
  return ok(out);
}

/**
 * Turns a standard `ports` entry into a host publication. `mode` is what the file says (`host` when it says
 * nothing): an explicit `ingress` asks for Swarm's routing mesh, which Ployz does not have.
 */
export function standardPort(port: ShortPort, mode: string, original: string): Parsed<NormalizedPort> {
  if (mode === "ingress") {
    const published = port.published ?? port.target;
    return err(
      `port "${original}" asks for mode "ingress" (Swarm's routing mesh), which Ployz does not have: remove "mode" ` +
        `to publish ${published} on each Machine that runs the Service, or route HTTP with x-ports ` +
        `"${published}:${port.target}/http"`,
    );
  }
  if (mode !== "host") return err(`invalid port mode "${mode}": expected "host" or "ingress"`);
  return ok({
    kind: "host",
    hostIp: port.hostIp,
    publishedPort: port.published ?? 0,
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
