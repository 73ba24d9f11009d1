/**
 * What a container carries so that every Machine can route to it: its Service's ingress ports and `x-caddy`
 * fragment ride as container labels, which the owning Machine publishes in its `containers` rows. A row may also
 * carry `stopping` once its Machine marked it to leave every Ingress Proxy before it stops.
 *
 * @module
 */

import type { Container } from "../store/mod.ts";

/** Label keys the serving projections read from published container rows. */
export const SERVING_LABELS: { readonly ingress: "ployz.ingress"; readonly caddy: "ployz.caddy" } = Object
  .freeze({
    ingress: "ployz.ingress",
    caddy: "ployz.caddy",
  });

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

/** The ingress part of a normalized Service: its `ports` (only `kind: "ingress"` entries count) and `caddy`. */
export interface ServingSource {
  /** Port publications; host ports are ignored. */
  ports: readonly (({ kind: "ingress" } & IngressRoute) | { kind: "host" })[];
  /** `x-caddy` fragment text, or null. */
  caddy: string | null;
}

/**
 * Labels the planner adds to each container of a Service so that every Ingress Proxy can route to it. Empty when
 * the Service has neither ingress ports nor `x-caddy`.
 */
export function servingLabels(service: ServingSource): Record<string, string> {
  const routes = service.ports.filter((p): p is { kind: "ingress" } & IngressRoute => p.kind === "ingress")
    .map((
      p,
    ) => ({
      hostname: p.hostname,
      "lb_port": p.loadBalancerPort,
      "container_port": p.containerPort,
      protocol: p.protocol,
    }));
  const out: Record<string, string> = {};
  if (routes.length > 0) out[SERVING_LABELS.ingress] = JSON.stringify(routes);
  if (service.caddy !== null && service.caddy.trim() !== "") out[SERVING_LABELS.caddy] = service.caddy;
  return out;
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
