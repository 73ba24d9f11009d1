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
  function rotated(replicas: Replica[]): Replica[] {
    if (replicas.length < 2) return replicas;
    const k = turn++ % replicas.length;
    return [...replicas.slice(k), ...replicas.slice(0, k)];
  }
  return {
    addresses(query: NameQuery): string[] {
      switch (query.kind) {
        case "service": {
          const all = rotated(services.get(query.key) ?? []);
          const ordered = query.nearest
            ? [...all.filter((r) => r.machineId === local), ...all.filter((r) => r.machineId !== local)]
            : all;
          return ordered.map((r) => r.address);
        }
        case "id":
          return rotated(ids.get(query.id) ?? []).map((r) => r.address);
        case "machine":
          return rotated((services.get(query.key) ?? []).filter((r) => r.machineId === query.machineId))
            .map((r) => r.address);
        default:
          return [];
      }
    },
  };
}
