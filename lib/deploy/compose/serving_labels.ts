/**
 * What a container carries so that every Machine can route to it: its Service's ingress `x-ports` and `x-caddy`
 * fragment ride as container labels, which the owning Machine publishes in its `containers` rows and every
 * Machine's serving projections read back.
 *
 * @module
 */

import type { NormalizedPort } from "./types.ts";

/** Label keys the serving projections read from published container rows. */
export const SERVING_LABELS: { readonly ingress: "ployz.ingress"; readonly caddy: "ployz.caddy" } = Object
  .freeze({
    ingress: "ployz.ingress",
    caddy: "ployz.caddy",
  });

/** The ingress part of a normalized Service: its `ports` (only `kind: "ingress"` entries count) and `caddy`. */
export interface ServingSource {
  /** Port publications; host ports are ignored. */
  ports: readonly (NormalizedPort | { kind: "host" })[];
  /** `x-caddy` fragment text, or null. */
  caddy: string | null;
}

/**
 * Labels the planner adds to each container of a Service so that every Ingress Proxy can route to it. Empty when
 * the Service has neither ingress ports nor `x-caddy`.
 */
export function servingLabels(service: ServingSource): Record<string, string> {
  const routes = [];
  for (const p of service.ports) {
    if (p.kind !== "ingress") continue;
    routes.push({
      hostname: p.hostname,
      "lb_port": p.loadBalancerPort,
      "container_port": p.containerPort,
      protocol: p.protocol,
    });
  }
  const out: Record<string, string> = {};
  if (routes.length > 0) out[SERVING_LABELS.ingress] = JSON.stringify(routes);
  if (service.caddy !== null && service.caddy.trim() !== "") out[SERVING_LABELS.caddy] = service.caddy;
  return out;
}
