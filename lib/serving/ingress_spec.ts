/**
 * The Ingress Proxy: Caddy in a container, a Global Service `ployz-system/caddy` with one slot per Machine,
 * publishing the HTTP port (80; 443 later), its admin socket directory bind-mounted from `<runDir>/caddy`.
 *
 * @module
 */

import { join } from "node:path";
import type { ContainerSpec } from "../deploy/machine/mod.ts";
import { CADDY_ADMIN_DIR_IN_CONTAINER } from "./caddy_admin.ts";

/** The Project the Ingress Proxy belongs to. */
export const INGRESS_PROJECT = "ployz-system";
/** The Ingress Proxy's Service name. */
export const INGRESS_SERVICE = "caddy";
/** The image built by `.ci/images_caddy.sh`; `PLOYZ_INGRESS_IMAGE` overrides it. */
export const DEFAULT_INGRESS_IMAGE = "ployz-system/caddy:2";

/** The Ingress Proxy image: `PLOYZ_INGRESS_IMAGE` when set, else {@link DEFAULT_INGRESS_IMAGE}. */
export function ingressImage(env: (name: string) => string | undefined = (n) => Deno.env.get(n)): string {
  const value = env("PLOYZ_INGRESS_IMAGE")?.trim();
  return value === undefined || value === "" ? DEFAULT_INGRESS_IMAGE : value;
}

/** The admin socket directory on the Machine. */
export function caddyRunDir(runDir: string): string {
  return join(runDir, "caddy");
}

/** The admin socket path on the Machine. */
export function caddyAdminSocket(runDir: string): string {
  return join(caddyRunDir(runDir), "admin.sock");
}

/** How to build one ingress slot's container. */
export interface IngressSlotOptions {
  /** Target Machine's id; part of the creation key. */
  machineId: string;
  /** Target Machine's run dir (default `/run/ployz`). */
  runDir?: string;
  /** Image reference; default {@link ingressImage}. */
  image?: string;
  /** Slot number; default 1. */
  slot?: number;
  /** Host port published for HTTP; default 80. */
  httpPort?: number;
  /** Host port published for HTTPS; default 443; null publishes none. */
  httpsPort?: number | null;
  /** Deployment id of the Deploy that creates it. */
  deployment: string;
  /** The Machine's bridge network; default `ployz`. */
  network?: string;
}

/** The kernel parameter that moves a closing listener's queued connections to another listener on its port. */
export const MIGRATE_REQ_SYSCTL = "net.ipv4.tcp_migrate_req";

/**
 * Whether a kernel of release `release` (default this Machine's) has {@link MIGRATE_REQ_SYSCTL}: Linux 5.14 and
 * later. Read from the release, as the daemon may not read `/proc/sys`.
 */
export function kernelMigratesRequests(release?: string): boolean {
  if (release === undefined) {
    try {
      release = Deno.osRelease();
    } catch {
      return false; // not allowed to ask: taken as a kernel without it
    }
  }
  const [major, minor] = (/^(\d+)\.(\d+)/.exec(release) ?? []).slice(1).map(Number);
  return major > 5 || (major === 5 && minor >= 14);
}

/** The container name of an ingress slot, e.g. `ployz-system-caddy-1`. */
export function ingressContainerName(slot = 1): string {
  return `${INGRESS_PROJECT}-${INGRESS_SERVICE}-${slot}`;
}

/**
 * The spec of one ingress slot. The creation key is derived from the Machine and slot, so every Deploy that
 * fills the slot finds the container an earlier one created instead of making a second.
 */
export function ingressContainerSpec(options: IngressSlotOptions): ContainerSpec {
  const slot = options.slot ?? 1;
  return {
    name: ingressContainerName(slot),
    creationKey: `ingress-${options.machineId}-${slot}`,
    project: INGRESS_PROJECT,
    service: INGRESS_SERVICE,
    deployment: options.deployment,
    slot: String(slot),
    image: options.image ?? ingressImage(),
    ports: [
      { containerPort: 80, hostPort: options.httpPort ?? 80, protocol: "tcp" },
      ...(options.httpsPort === null
        ? []
        : [{ containerPort: 443, hostPort: options.httpsPort ?? 443, protocol: "tcp" as const }]),
    ],
    mounts: [{
      type: "bind",
      source: caddyRunDir(options.runDir ?? "/run/ployz"),
      target: CADDY_ADMIN_DIR_IN_CONTAINER,
    }],
    restart: { policy: "unless-stopped" },
    stopGraceSeconds: 10,
    network: { name: options.network ?? "ployz" },
  };
}
