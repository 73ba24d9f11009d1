/**
 * Reading what a container carries so that every Machine can route to it: the labels themselves
 * (`SERVING_LABELS`, `servingLabels`) are defined beside the Compose loader, which the planner uses. A row may also
 * carry `stopping` once its Machine marked it to leave every Ingress Proxy before it stops.
 *
 * @module
 */

import { SERVING_LABELS } from "../deploy/machine/mod.ts";
import type { Container } from "../store/mod.ts";

export { SERVING_LABELS, servingLabels, type ServingSource } from "../deploy/machine/mod.ts";

/** One HTTP(S) ingress route of a Service, as carried in the `ployz.ingress` label. */
export interface IngressRoute {
  /** Explicit hostname, a Cluster-Domain label, or null for an assigned name. */
  hostname: string | null;
  /** Port Caddy listens on. */
  loadBalancerPort: number;
  /** Port inside the container. */
  containerPort: number;
  /** `http` or `https`. */
  protocol: "http" | "https";
}

/** Reads the ingress routes a row's labels declare; an unreadable label yields none (tolerant reader). */
export function ingressRoutes(row: Container): IngressRoute[] {
  const text = row.labels?.[SERVING_LABELS.ingress];
  if (text === undefined) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  const out: IngressRoute[] = [];
  for (const item of parsed) {
    if (typeof item !== "object" || item === null) continue;
    const r = item as Record<string, unknown>;
    const hostname = typeof r.hostname === "string" && r.hostname !== "" ? r.hostname.toLowerCase() : null;
    const lb = Number(r.lb_port);
    const port = Number(r.container_port);
    const protocol = r.protocol === "https" ? "https" : r.protocol === "http" ? "http" : undefined;
    if (protocol === undefined || !validPort(lb) || !validPort(port)) continue;
    out.push({ hostname, loadBalancerPort: lb, containerPort: port, protocol });
  }
  return out;
}

/** The `x-caddy` fragment a row carries, or undefined. */
export function caddyFragment(row: Container): string | undefined {
  const text = row.labels?.[SERVING_LABELS.caddy];
  return text === undefined || text.trim() === "" ? undefined : text;
}

/** Whether a row is marked stopping (it must leave every Ingress Proxy before it stops). */
export function markedStopping(row: Container): boolean {
  return row.stopping === true || (typeof row.stopping === "string" && row.stopping !== "");
}

function validPort(n: number): boolean {
  return Number.isInteger(n) && n > 0 && n < 65536;
}
