/**
 * Loads a {@link CaddyProjection} into one Ingress Proxy and confirms it: each `x-caddy` fragment is validated by
 * adapting the base plus the fragments accepted so far plus it, so a bad fragment is skipped and reported and
 * never breaks the others (`/adapt` is the validation). The result is adapted to JSON,
 * keeps the admin block, is loaded with `/load`, and is read back with `/config/`: it counts as loaded only when
 * the read-back equals what was sent. A failed attempt is retried with backoff and reported.
 *
 * @module
 */

import { CADDY_ADMIN_CONFIG, type CaddyAdmin, CaddyAdminError } from "./caddy_admin.ts";
import type { CaddyProjection, ServingProblem } from "./caddy_projection.ts";
import { sleep } from "../util/mod.ts";

/** What one load achieved. */
export interface CaddyLoadReport {
  /** True when Caddy's read-back config equals the config sent. */
  loaded: boolean;
  /** The config sent (last attempt), when one was built. */
  config?: Record<string, unknown>;
  /** Fragments skipped because Caddy could not adapt them. */
  skipped: ServingProblem[];
  /** Attempts made. */
  attempts: number;
  /** The last failure, when not loaded. */
  error?: string;
}

/** Retry policy of {@link loadCaddy}. */
export interface CaddyLoadOptions {
  /** Attempts before giving up; default 4. */
  attempts?: number;
  /** First pause between attempts, doubled each time; default 250 ms. */
  backoffMs?: number;
  /** Ends the retries early. */
  signal?: AbortSignal;
}

/** Validates, loads and confirms a projection; never throws for Caddy's answers. */
export async function loadCaddy(
  admin: CaddyAdmin,
  projection: CaddyProjection,
  options: CaddyLoadOptions = {},
): Promise<CaddyLoadReport> {
  const attempts = options.attempts ?? 4;
  let pause = options.backoffMs ?? 250;
  let last: CaddyLoadReport = { loaded: false, skipped: [], attempts: 0, error: "not attempted" };
  for (let attempt = 1; attempt <= attempts; attempt++) {
    last = await loadOnce(admin, projection);
    last.attempts = attempt;
    if (last.loaded || options.signal?.aborted) return last;
    if (attempt < attempts) {
      await sleep(pause);
      pause *= 2;
    }
  }
  return last;
}

async function loadOnce(admin: CaddyAdmin, projection: CaddyProjection): Promise<CaddyLoadReport> {
  const skipped: ServingProblem[] = [];
  try {
    let accepted = projection.base;
    for (const fragment of projection.fragments) {
      const candidate = `${accepted}\n# x-caddy of Service "${fragment.service}"\n${fragment.text}\n`;
      try {
        await admin.adapt(candidate);
        accepted = candidate;
      } catch (error) {
        if (error instanceof CaddyAdminError && error.status === 0) throw error;
        skipped.push({ service: fragment.service, message: `x-caddy: ${(error as Error).message}` });
      }
    }
    const config = withCertificates(
      { ...await admin.adapt(accepted), admin: CADDY_ADMIN_CONFIG },
      projection.tls,
    );
    await admin.load(config);
    const readBack = await admin.config();
    if (canonical(readBack) !== canonical(config)) {
      return {
        loaded: false,
        config,
        skipped,
        attempts: 0,
        error: "Caddy's loaded config differs from the one sent",
      };
    }
    return { loaded: true, config, skipped, attempts: 0 };
  } catch (error) {
    return { loaded: false, skipped, attempts: 0, error: (error as Error).message };
  }
}

// Certificates go in as PEM through the admin API (`tls.certificates.load_pem`): no file on any Machine holds a
// key, and Caddy picks one by SNI for the https sites.
function withCertificates(
  config: Record<string, unknown>,
  certificates: CaddyProjection["tls"],
): Record<string, unknown> {
  if (certificates.length === 0) return config;
  const apps = { ...(config.apps as Record<string, unknown> | undefined) };
  const tls = { ...(apps.tls as Record<string, unknown> | undefined) };
  const loaders = { ...(tls.certificates as Record<string, unknown> | undefined) };
  const existing = Array.isArray(loaders.load_pem) ? loaders.load_pem : [];
  loaders.load_pem = [
    ...existing,
    ...certificates.map((c) => ({ certificate: c.pem, key: c.key, tags: [`ployz:${c.hostname}`] })),
  ];
  tls.certificates = loaders;
  apps.tls = tls;
  return { ...config, apps };
}

/** Every upstream `dial` address in a Caddy JSON config, sorted and unique. */
export function configDials(config: unknown): string[] {
  const out = new Set<string>();
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (typeof value === "object" && value !== null) {
      for (const [key, child] of Object.entries(value)) {
        if (key === "dial" && typeof child === "string") out.add(child);
        else walk(child);
      }
    }
  };
  walk(config);
  return [...out].sort();
}

/** JSON with object keys sorted, for comparing configs. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v) => {
    if (typeof v !== "object" || v === null || Array.isArray(v)) return v;
    return Object.fromEntries(
      Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a < b ? -1 : 1),
    );
  });
}
