import { type NameQuery, serviceKey } from "./names.ts";
import type { DnsSpec } from "./spec.ts";

interface Replica {
  address: string;
  machineId: string;
}

/** The answers a loaded spec can give, indexed for lookups by name. */
export interface Zone {
  /** Addresses for a parsed name: empty when the name is unknown. */
  addresses(query: NameQuery): string[];
  /**
   * Every order {@link Zone.addresses} can give a name, in the order successive queries would get them (one
   * entry, empty, when the name is unknown). An answer cache serves these in turn.
   */
  orderings(query: NameQuery): string[][];
}

/**
 * Builds the lookup index of a spec. Every answer is rotated by a per-zone counter so clients that take the
 * first address spread over the replicas; `nearest` then moves this Machine's replicas to the front.
 */
export function buildZone(spec: DnsSpec): Zone {
  const local = spec.machine_id.toLowerCase();
  const services = new Map<string, Replica[]>();
  const ids = new Map<string, Replica[]>();
  for (const s of spec.services) {
    const replicas = s.replicas.map((r) => ({ address: r.address, machineId: r.machine_id.toLowerCase() }));
    const key = serviceKey(s.service.toLowerCase(), s.project.toLowerCase());
    services.set(key, [...(services.get(key) ?? []), ...replicas]);
    if (s.service_id) ids.set(s.service_id.toLowerCase(), replicas);
    for (const [i, r] of s.replicas.entries()) {
      if (r.container_id && !ids.has(r.container_id.toLowerCase())) {
        ids.set(r.container_id.toLowerCase(), [replicas[i]]);
      }
    }
  }
  let turn = 0;
  function candidates(query: NameQuery): Replica[] {
    switch (query.kind) {
      case "service":
        return services.get(query.key) ?? [];
      case "id":
        return ids.get(query.id) ?? [];
      case "machine":
        return (services.get(query.key) ?? []).filter((r) => r.machineId === query.machineId);
      default:
        return [];
    }
  }
  function ordered(query: NameQuery, replicas: Replica[], k: number): string[] {
    const all = k === 0 ? replicas : [...replicas.slice(k), ...replicas.slice(0, k)];
    const first = query.kind === "service" && query.nearest
      ? [...all.filter((r) => r.machineId === local), ...all.filter((r) => r.machineId !== local)]
      : all;
    return first.map((r) => r.address);
  }
  return {
    addresses(query: NameQuery): string[] {
      const replicas = candidates(query);
      return ordered(query, replicas, replicas.length < 2 ? 0 : turn++ % replicas.length);
    },
    orderings(query: NameQuery): string[][] {
      const replicas = candidates(query);
      return Array.from({ length: Math.max(1, replicas.length) }, (_, k) => ordered(query, replicas, k));
    },
  };
}
