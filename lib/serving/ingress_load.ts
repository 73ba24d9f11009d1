/**
 * The local Ingress Proxy as a serving pass sees it: which container it is, whether one is about to serve, and
 * loading the pass's Caddy projection into it only when that projection (or the proxy) changed. What a load
 * confirmed is kept as {@link LoadedIngress}: the dials the retire and removal steps wait on, the challenges this
 * Machine answers, and what the proxy routes.
 *
 * @module
 */

import type { Container, ServingPointer } from "../store/mod.ts";
import { type CaddyAdmin } from "./caddy_admin.ts";
import { type CaddyLoadReport, canonical, configDials, loadCaddy } from "./caddy_loader.ts";
import type { CaddyProjection } from "./caddy_projection.ts";
import { INGRESS_PROJECT, INGRESS_SERVICE } from "./ingress_spec.ts";
import { ingressRoutes } from "./labels.ts";
import { type ServingContext, servingGroups } from "./serving_set.ts";

/** What the local Ingress Proxy serves, as its last confirmed load left it. */
export interface IngressState {
  /** The Ingress Proxy container the config was loaded into; null when none runs here. */
  proxyId: string | null;
  /** `project/service` of each Service with ingress routes and at least one upstream in that config. */
  routed: string[];
}

/** What the local proxy was last confirmed to have loaded. */
export interface LoadedIngress {
  /** The canonical key of that load (proxy, start, projection); undefined makes the next pass load. */
  readonly key: string | undefined;
  /** Every `address:port` its config dials. */
  readonly dials: readonly string[];
  /** The ACME challenge tokens it answers. */
  readonly answered: ReadonlySet<string>;
  /** What it serves. */
  readonly ingress: IngressState;
}

/** Nothing loaded: no proxy runs here, or none has loaded yet. */
export const NOTHING_LOADED: LoadedIngress = Object.freeze({
  key: undefined,
  dials: [],
  answered: new Set<string>(),
  ingress: { proxyId: null, routed: [] },
});

/** The pass's view of the local proxy after it ran. */
export interface IngressLoad {
  /** `absent` (no running Ingress Proxy here), `loaded`, `unchanged` or `failed`. */
  caddy: "absent" | "loaded" | "unchanged" | "failed";
  /** The load report when a load ran. */
  report?: CaddyLoadReport;
  /** What the proxy holds now, as far as this Machine confirmed. */
  loaded: LoadedIngress;
  /** Why the load failed, when it did. */
  error?: string;
}

function isLocalIngress(row: Container, machineId: string): boolean {
  return row.machine_id === machineId && row.project === INGRESS_PROJECT && row.service === INGRESS_SERVICE;
}

/** This Machine's running Ingress Proxy, from the container rows. */
export function localProxy(rows: readonly Container[], machineId: string): Container | undefined {
  return rows.find((r) => isLocalIngress(r, machineId) && r.state === "running");
}

/**
 * Whether an Ingress Proxy is about to serve here (created or restarting, none running): it has loaded nothing yet,
 * so this Machine acks nothing until it has, and no retire loop or client stop counts it as having dropped anything.
 */
export function proxyStarting(rows: readonly Container[], machineId: string): boolean {
  return localProxy(rows, machineId) === undefined &&
    rows.some((r) => isLocalIngress(r, machineId) && (r.state === "created" || r.state === "restarting"));
}

/** `project/service` of each Service with ingress routes that serves, leaving containers excluded. */
export function routedServices(
  containers: readonly Container[],
  pointers: readonly ServingPointer[],
  context: ServingContext,
): string[] {
  return servingGroups(containers, pointers, context)
    .filter((g) => g.serving.some((r) => ingressRoutes(r).length > 0))
    .map((g) => g.key);
}

/**
 * Loads the projection into the local proxy unless it already holds it; a proxy gone forgets what was loaded, and a
 * failed load keeps what was confirmed before but makes the next pass load again.
 */
export async function loadLocalProxy(
  admin: CaddyAdmin,
  before: LoadedIngress,
  pass: { proxy: Container | undefined; projection: CaddyProjection; routed: string[] },
  options: { signal: AbortSignal; log: (line: string) => void },
): Promise<IngressLoad> {
  const { proxy, projection } = pass;
  if (proxy === undefined) return { caddy: "absent", loaded: NOTHING_LOADED };
  const key = canonical({
    proxy: proxy.id,
    started: proxy.started_at,
    base: projection.base,
    f: projection.fragments,
    tls: projection.tls.map((c) => `${c.hostname}/${c.serial}`),
  });
  if (key === before.key) return { caddy: "unchanged", loaded: before };
  const report = await loadCaddy(admin, projection, { signal: options.signal });
  if (!report.loaded) {
    return {
      caddy: "failed",
      report,
      loaded: { ...before, key: undefined },
      error: `Caddy load failed after ${report.attempts} attempts: ${report.error}`,
    };
  }
  for (const s of report.skipped) options.log(`serving: skipped ${s.service}: ${s.message}`);
  return {
    caddy: "loaded",
    report,
    loaded: {
      key,
      dials: configDials(report.config),
      answered: new Set(projection.answered),
      ingress: { proxyId: proxy.id, routed: pass.routed },
    },
  };
}
