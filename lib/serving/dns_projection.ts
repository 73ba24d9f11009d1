/**
 * The Internal DNS projection: replicated rows → the input of lib/dns's `renderDnsSpec`. Pure.
 *
 * @module
 */

import type { DnsServiceInput, DnsSpecInput } from "../dns/mod.ts";
import type { Container, ServingPointer } from "../store/mod.ts";
import { type ServingContext, servingGroups } from "./serving_set.ts";

/** What {@link projectDns} needs besides rows. */
export interface DnsProjectionOptions extends ServingContext {
  /** This Machine's id. */
  machineId: string;
  /** Addresses the DNS process answers on, `ip:port`. */
  listen: string[];
  /** Explicit upstreams; omit for the host's resolv.conf. */
  upstreams?: string[];
  /** Render time. */
  now: Date;
}

/**
 * Projects rows onto the DNS spec input: one entry per Service that has serving containers, each replica by its
 * first address and its Machine. Services with nothing serving are left out, so their names answer NXDOMAIN.
 */
export function projectDns(
  containers: readonly Container[],
  pointers: readonly ServingPointer[],
  options: DnsProjectionOptions,
): DnsSpecInput {
  const services: DnsServiceInput[] = [];
  for (const group of servingGroups(containers, pointers, options)) {
    if (group.serving.length === 0) continue;
    services.push({
      project: group.project,
      service: group.service,
      replicas: group.serving.map((row) => ({
        address: (row.addresses ?? [])[0],
        machineId: row.machine_id,
        containerId: row.id,
      })),
    });
  }
  return {
    machineId: options.machineId,
    listen: options.listen,
    ...(options.upstreams === undefined ? {} : { upstreams: options.upstreams }),
    services,
    generatedAt: options.now,
  };
}
