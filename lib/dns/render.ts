import { DNS_SPEC_FORMAT, type DnsSpec } from "./spec.ts";

/** One serving replica as the daemon knows it. */
export interface DnsReplicaInput {
  /** The container's IPv4 address. */
  address: string;
  /** The Machine that runs it. */
  machineId: string;
  /** The container id. */
  containerId?: string;
}

/** One Service and its serving replicas, as the daemon derives them. */
export interface DnsServiceInput {
  /** Project name. */
  project: string;
  /** Service name. */
  service: string;
  /** Service id. */
  serviceId?: string;
  /** Replicas that take traffic. */
  replicas: DnsReplicaInput[];
}

/** What {@link renderDnsSpec} needs from the daemon. */
export interface DnsSpecInput {
  /** This Machine's id. */
  machineId: string;
  /** Addresses to answer on, `ip:port`. */
  listen: string[];
  /** Explicit upstreams; omit to use the host's `/etc/resolv.conf`. */
  upstreams?: string[];
  /** Services with their replicas. */
  services: DnsServiceInput[];
  /** The render time. */
  generatedAt: Date;
}

/**
 * Renders the dns.json spec from what the daemon observed. Pure and deterministic apart from `generated_at`:
 * names are lowercased and everything is sorted, so an unchanged Cluster renders the same services.
 */
export function renderDnsSpec(input: DnsSpecInput): DnsSpec {
  const services = input.services.map((s) => ({
    project: s.project.toLowerCase(),
    service: s.service.toLowerCase(),
    ...(s.serviceId === undefined ? {} : { service_id: s.serviceId.toLowerCase() }),
    replicas: s.replicas.map((r) => ({
      address: r.address,
      machine_id: r.machineId,
      ...(r.containerId === undefined ? {} : { container_id: r.containerId.toLowerCase() }),
    })).sort((a, b) => compare(a.address, b.address) || compare(a.container_id ?? "", b.container_id ?? "")),
  })).sort((a, b) => compare(a.project, b.project) || compare(a.service, b.service));
  return {
    format: DNS_SPEC_FORMAT,
    generated_at: input.generatedAt.toISOString(),
    machine_id: input.machineId,
    listen: [...input.listen],
    ...(input.upstreams === undefined ? {} : { upstreams: [...input.upstreams] }),
    services,
  };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
