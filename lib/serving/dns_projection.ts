/**
 * The Internal DNS projection: replicated rows → the input of lib/dns's `renderDnsSpec`. Pure.
 *
 * @module
 */

import type { DnsServiceInput, DnsSpecInput } from "../dns/writer/mod.ts";
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
 * first address, its Machine and its {@link lookupId}. Services with nothing serving are left out, so their names answer NXDOMAIN.
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
        containerId: lookupId(row.id),
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

/**
 * The container id `<id>.id.lookup.internal` answers to: Docker's 12-character short id (also the container's
 * hostname). A full Docker id is 64 characters and a DNS label holds at most 63, so no client could ask for it.
 */
export function lookupId(containerId: string): string {
  return containerId.length > 63 ? containerId.slice(0, 12) : containerId;
}

/**
 * `PLOYZ_DNS_UPSTREAMS`: comma-separated `ip[:port]` servers Internal DNS forwards names outside `.internal` to;
 * undefined when unset or empty, which leaves the choice to the host's resolv.conf.
 */
export function dnsUpstreamsFromEnv(
  env: (name: string) => string | undefined = (n) => Deno.env.get(n),
): string[] | undefined {
  const list = (env("PLOYZ_DNS_UPSTREAMS") ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
  return list.length > 0 ? list : undefined;
}
