// Checked by hand rather than with zod: zod adds about 10 MB of resident memory to `ployzd dns`, which runs on
// every Machine, and the format is small and frozen.
import { isIPv4, isIPv6 } from "./ip.ts";
import { messageOf } from "../util/mod.ts";

/** The dns.json format this build reads and writes. A reader refuses only a different `format`. */
export const DNS_SPEC_FORMAT = 1;

/**
 * The exit status of `ployzd dns` when this build cannot serve the spec's format and handed the port back: a
 * supervisor must not start the same build again until the spec or the binary changes.
 */
export const DNS_EXIT_UNSUPPORTED_SPEC = 3;

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

type Fields = Record<string, unknown>;

function isObject(value: unknown): value is Fields {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === "string");
}

// The first field of `value` that does not have its expected shape, as `"field": what it should be`.
function shapeProblem(
  value: Fields,
  fields: Record<string, "string" | "non-empty string" | "string array" | "array">,
  optional: string[] = [],
): string | undefined {
  for (const [name, kind] of Object.entries(fields)) {
    const v = value[name];
    if (v === undefined && optional.includes(name)) continue;
    const fits = kind === "string"
      ? typeof v === "string"
      : kind === "non-empty string"
      ? typeof v === "string" && v !== ""
      : kind === "string array"
      ? isStringArray(v)
      : Array.isArray(v);
    if (!fits) return `"${name}": expected ${kind === "array" ? "an array" : `a ${kind}`}`;
  }
  return undefined;
}

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
    return { kind: "invalid", reason: `not JSON: ${messageOf(error)}` };
  }
  if (!isObject(json) || typeof json.format !== "number" || !Number.isInteger(json.format)) {
    return { kind: "invalid", reason: `"format" is missing or not an integer` };
  }
  if (json.format !== DNS_SPEC_FORMAT) {
    return {
      kind: "unsupported",
      format: json.format,
      reason: `format ${json.format} is not known to this build (it reads format ${DNS_SPEC_FORMAT})`,
    };
  }
  const data: Fields = { "generated_at": "", "machine_id": "", services: [], ...json };
  const problem = shapeProblem(
    data,
    {
      "generated_at": "string",
      "machine_id": "string",
      listen: "string array",
      upstreams: "string array",
      services: "array",
    },
    ["upstreams"],
  );
  if (problem) return { kind: "invalid", reason: problem };
  const listen: HostPort[] = [];
  for (const address of data.listen as string[]) {
    const hostPort = parseHostPort(address, undefined);
    if (!hostPort) return { kind: "invalid", reason: `listen address "${address}" is not "ip:port"` };
    listen.push(hostPort);
  }
  for (const upstream of (data.upstreams as string[] | undefined) ?? []) {
    if (!parseHostPort(upstream, 53)) {
      return { kind: "invalid", reason: `upstream "${upstream}" is not "ip" or "ip:port"` };
    }
  }
  const skipped: string[] = [];
  const services = (data.services as unknown[]).flatMap((raw, i) => {
    const service: Fields = isObject(raw) ? { replicas: [], ...raw } : {};
    const serviceProblem = isObject(raw)
      ? shapeProblem(service, {
        project: "non-empty string",
        service: "non-empty string",
        "service_id": "string",
        replicas: "array",
      }, ["service_id"])
      : "expected an object";
    if (serviceProblem) {
      skipped.push(`services[${i}]: ${serviceProblem}`);
      return [];
    }
    const replicas = (service.replicas as unknown[]).flatMap((rawReplica, j) => {
      const where = `services[${i}].replicas[${j}]`;
      const replica: Fields = isObject(rawReplica) ? { "machine_id": "", ...rawReplica } : {};
      const replicaProblem = isObject(rawReplica)
        ? shapeProblem(replica, { address: "string", "machine_id": "string", "container_id": "string" }, [
          "container_id",
        ])
        : "expected an object";
      if (replicaProblem) {
        skipped.push(`${where}: ${replicaProblem}`);
        return [];
      }
      if (!isIPv4(replica.address as string)) {
        skipped.push(`${where}: address "${replica.address}" is not IPv4`);
        return [];
      }
      return [replica as DnsReplica];
    });
    return [{ ...service, replicas } as DnsService];
  });
  const spec = { ...data, format: json.format, services } as DnsSpec;
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
