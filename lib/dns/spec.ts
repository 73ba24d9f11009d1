import { z } from "zod";
import { isIPv4, isIPv6 } from "node:net";

/** The dns.json format this build reads and writes. A reader refuses only a different `format`. */
export const DNS_SPEC_FORMAT = 1;

/** One running replica of a Service: where it answers and which Machine holds it. */
export interface DnsReplica {
  /** The container's IPv4 address on the Cluster network. */
  address: string;
  /** The Machine the container runs on. */
  "machine_id": string;
  /** The container id, for `<container-id>.id.lookup.internal`. */
  "container_id"?: string;
  /** Fields a later release added; kept, never interpreted. */
  [unknown: string]: unknown;
}

/** A Service with the replicas that take traffic. */
export interface DnsService {
  /** The Project name (the second label of `svc.project.internal`). */
  project: string;
  /** The Service name (the first label). */
  service: string;
  /** The Service id, for `<service-id>.id.lookup.internal`. */
  "service_id"?: string;
  /** Replicas that take traffic, in any order. */
  replicas: DnsReplica[];
  /** Fields a later release added; kept, never interpreted. */
  [unknown: string]: unknown;
}

/**
 * `/run/ployz/dns.json`: what the daemon hands its Internal DNS process. Frozen format: fields are only added, a
 * reader ignores what it does not know, and `format` changes only for a change an older reader must refuse.
 */
export interface DnsSpec {
  /** Always {@link DNS_SPEC_FORMAT} for this build. */
  format: number;
  /** When the daemon rendered the spec (RFC 3339), for diagnostics only. */
  "generated_at": string;
  /** This Machine: `nearest` puts its replicas first. */
  "machine_id": string;
  /** `ip:port` (or `[ipv6]:port`) addresses to answer on, UDP and TCP. */
  listen: string[];
  /** `ip` or `ip:port` servers for names outside `.internal`; absent means the host's `/etc/resolv.conf`. */
  upstreams?: string[];
  /** Services and their serving replicas. */
  services: DnsService[];
  /** Fields a later release added; kept, never interpreted. */
  [unknown: string]: unknown;
}

/** A listen or upstream address split into its parts. */
export interface HostPort {
  /** The IP address, without brackets. */
  hostname: string;
  /** The port. */
  port: number;
}

/** The outcome of reading a spec: usable, written by a newer release, or broken. */
export type SpecReading =
  | { kind: "ok"; spec: DnsSpec; listen: HostPort[]; skipped: string[] }
  | { kind: "unsupported"; format: unknown; reason: string }
  | { kind: "invalid"; reason: string };

const head = z.looseObject({
  format: z.number().int(),
});

const body = z.looseObject({
  "generated_at": z.string().default(""),
  "machine_id": z.string().default(""),
  listen: z.array(z.string()),
  upstreams: z.array(z.string()).optional(),
  services: z.array(z.unknown()).default([]),
});

const replicaSchema = z.looseObject({
  address: z.string(),
  "machine_id": z.string().default(""),
  "container_id": z.string().optional(),
});

const serviceSchema = z.looseObject({
  project: z.string().min(1),
  service: z.string().min(1),
  "service_id": z.string().optional(),
  replicas: z.array(z.unknown()).default([]),
});

/**
 * Reads dns.json text tolerantly. Unknown fields are kept; a Service or replica this build cannot use (say, an
 * IPv6 replica a later release added) is skipped and named in `skipped`, never a reason to refuse the spec. Only a
 * `format` other than {@link DNS_SPEC_FORMAT} is `unsupported`; broken JSON, a missing `listen` or an unusable
 * listen address is `invalid`.
 */
export function readDnsSpec(text: string): SpecReading {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { kind: "invalid", reason: `not JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  const top = head.safeParse(json);
  if (!top.success) return { kind: "invalid", reason: `"format" is missing or not an integer` };
  if (top.data.format !== DNS_SPEC_FORMAT) {
    return {
      kind: "unsupported",
      format: top.data.format,
      reason: `format ${top.data.format} is not known to this build (it reads format ${DNS_SPEC_FORMAT})`,
    };
  }
  const parsed = body.safeParse(json);
  if (!parsed.success) return { kind: "invalid", reason: issueText(parsed.error) };
  const listen: HostPort[] = [];
  for (const address of parsed.data.listen) {
    const hostPort = parseHostPort(address, undefined);
    if (!hostPort) return { kind: "invalid", reason: `listen address "${address}" is not "ip:port"` };
    listen.push(hostPort);
  }
  for (const upstream of parsed.data.upstreams ?? []) {
    if (!parseHostPort(upstream, 53)) {
      return { kind: "invalid", reason: `upstream "${upstream}" is not "ip" or "ip:port"` };
    }
  }
  const skipped: string[] = [];
  const services = parsed.data.services.flatMap((raw, i) => {
    const service = serviceSchema.safeParse(raw);
    if (!service.success) {
      skipped.push(`services[${i}]: ${issueText(service.error)}`);
      return [];
    }
    const replicas = service.data.replicas.flatMap((rawReplica, j) => {
      const replica = replicaSchema.safeParse(rawReplica);
      const where = `services[${i}].replicas[${j}]`;
      if (!replica.success) {
        skipped.push(`${where}: ${issueText(replica.error)}`);
        return [];
      }
      if (!isIPv4(replica.data.address)) {
        skipped.push(`${where}: address "${replica.data.address}" is not IPv4`);
        return [];
      }
      return [replica.data as DnsReplica];
    });
    return [{ ...service.data, replicas } as DnsService];
  });
  const spec = { ...parsed.data, format: top.data.format, services } as DnsSpec;
  return { kind: "ok", spec, listen, skipped };
}

/**
 * Parses `ip:port`, `[ipv6]:port`, or (when `defaultPort` is given) a bare `ip`. Returns undefined for anything
 * else, including host names: DNS must not need DNS to start.
 */
export function parseHostPort(text: string, defaultPort: number | undefined): HostPort | undefined {
  const bracketed = text.match(/^\[([^\]]+)\](?::(\d+))?$/);
  if (bracketed) return checked(bracketed[1], bracketed[2], defaultPort, isIPv6);
  if (isIPv6(text)) return checked(text, undefined, defaultPort, isIPv6);
  const v4 = text.match(/^([^:]+)(?::(\d+))?$/);
  if (v4) return checked(v4[1], v4[2], defaultPort, isIPv4);
  return undefined;
}

function checked(
  hostname: string,
  portText: string | undefined,
  defaultPort: number | undefined,
  valid: (ip: string) => boolean,
): HostPort | undefined {
  if (!valid(hostname)) return undefined;
  const port = portText === undefined ? defaultPort : Number(portText);
  if (port === undefined || !Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  return { hostname, port };
}

/** `ip:port`, bracketing IPv6. */
export function formatHostPort({ hostname, port }: HostPort): string {
  return hostname.includes(":") ? `[${hostname}]:${port}` : `${hostname}:${port}`;
}

function issueText(error: z.ZodError): string {
  const issue = error.issues[0];
  const path = issue.path.length > 0 ? `"${issue.path.join(".")}": ` : "";
  return `${path}${issue.message}`;
}
