/**
 * Certificates for https ingress, as replicated name-keyed facts: reading a `certificates` row (untrusted: it may
 * come from any Machine), deciding which hostnames need a certificate obtained or renewed, which Machine asks
 * the CA, and when a failed attempt may be retried. Pure, apart from parsing X.509 with `node:crypto`.
 *
 * @module
 */

import { createPrivateKey, X509Certificate } from "node:crypto";
import type { Certificate } from "../store/mod.ts";

/** Renew when a certificate is this close to expiry (or a third of its lifetime, when shorter). */
export const RENEW_BEFORE_MS = 30 * 24 * 3600_000;
/** First pause after a failed attempt; doubled per failure, with ±25 % jitter. */
export const RETRY_BASE_MS = 30_000;
/** Longest pause between attempts. */
export const RETRY_MAX_MS = 3600_000;

/** A certificate row that can be served: it parses, covers its name, holds a matching key and has not expired. */
export interface UsableCertificate {
  /** The hostname (the row's key). */
  hostname: string;
  /** Leaf certificate serial, hex. */
  serial: string;
  /** Issuer's distinguished name. */
  issuer: string;
  /** Expiry. */
  notAfter: Date;
  /** Start of validity. */
  notBefore: Date;
  /** Chain, PEM. */
  pem: string;
  /** Private key, PEM. */
  key: string;
}

/**
 * Whether no public ACME CA can validate `hostname`: names under the Cluster's own `.internal` domain resolve only
 * inside the Cluster, so they are served with a certificate from the Cluster's internal root, or one an operator
 * adds (`ployz cert add`).
 */
export function acmeUnreachable(hostname: string): boolean {
  return hostname.endsWith(".internal");
}

/**
 * Whether `hostname` is served with a certificate from the Cluster's internal root: a `.internal` name unless an
 * operator added its certificate, or any name an operator opted in (its row's source is `internal`).
 */
export function internalName(hostname: string, row: Certificate | undefined): boolean {
  if (row?.source === "internal") return true;
  return acmeUnreachable(hostname) && row?.source !== "operator";
}

/** Whether the leaf `pem` (the first certificate of the chain) was signed by `rootPem`. Never throws. */
export function issuedByRoot(pem: string, rootPem: string): boolean {
  try {
    const leaf = new X509Certificate(pem);
    const root = new X509Certificate(rootPem);
    return leaf.checkIssued(root) && leaf.verify(root.publicKey);
  } catch {
    return false;
  }
}

/** Why a hostname cannot be given a certificate, or null when it can. */
export function hostnameProblem(hostname: string): string | null {
  if (hostname.startsWith("*.")) {
    return `wildcard "${hostname}" needs a DNS-01 challenge, which ployz does not support yet; ` +
      "name each hostname instead";
  }
  if (
    hostname.length > 253 || !hostname.includes(".") ||
    !hostname.split(".").every((l) => /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(l)) ||
    /^[0-9.]+$/.test(hostname)
  ) {
    return `"${hostname}" is not a valid DNS hostname: expected lowercase labels separated by "."`;
  }
  return null;
}

/** Reads a row into a servable certificate, or explains why it cannot be served. Never throws. */
export function usableCertificate(
  row: Certificate | undefined,
  now: Date,
): { ok: true; cert: UsableCertificate } | { ok: false; reason: string } {
  if (row === undefined) return { ok: false, reason: "no certificate" };
  if (typeof row.pem !== "string" || typeof row.key !== "string" || row.pem === "" || row.key === "") {
    return { ok: false, reason: "no certificate" };
  }
  try {
    const x509 = new X509Certificate(row.pem);
    if (x509.checkHost(row.name) === undefined) {
      return { ok: false, reason: `certificate does not cover "${row.name}"` };
    }
    if (!x509.checkPrivateKey(createPrivateKey(row.key))) {
      return { ok: false, reason: "private key does not match the certificate" };
    }
    const notAfter = new Date(x509.validTo);
    const notBefore = new Date(x509.validFrom);
    if (notAfter.getTime() <= now.getTime()) {
      return { ok: false, reason: `certificate expired at ${notAfter.toISOString()}` };
    }
    return {
      ok: true,
      cert: {
        hostname: row.name,
        serial: x509.serialNumber.toLowerCase(),
        issuer: x509.issuer.replaceAll("\n", ", "),
        notAfter,
        notBefore,
        pem: row.pem,
        key: row.key,
      },
    };
  } catch (error) {
    return { ok: false, reason: `unreadable certificate: ${(error as Error).message}` };
  }
}

/** The `certificates` row that serves `cert`, written by Machine `machineId` at `now`. */
export function certificateRow(
  cert: UsableCertificate,
  source: "acme" | "internal" | "operator",
  machineId: string,
  now: Date,
): Certificate {
  return {
    name: cert.hostname,
    domains: [cert.hostname],
    pem: cert.pem,
    key: cert.key,
    "not_after": cert.notAfter.toISOString(),
    serial: cert.serial,
    issuer: cert.issuer,
    source,
    "renewed_at": now.toISOString(),
    "renewed_by": machineId,
  };
}

/** When a usable certificate is due for renewal: 30 days before expiry, or with a third of its life left. */
export function renewalDue(cert: UsableCertificate): Date {
  const life = cert.notAfter.getTime() - cert.notBefore.getTime();
  const before = Math.min(RENEW_BEFORE_MS, Math.floor(life / 3));
  return new Date(cert.notAfter.getTime() - before);
}

/** What to do about one https hostname. */
export interface CertificateTask {
  /** The hostname. */
  hostname: string;
  /** `issue` (nothing servable) or `renew` (servable, due or asked for). */
  kind: "issue" | "renew";
  /** Who issues it: an ACME CA, or the Cluster's internal root. */
  issuer: "acme" | "internal";
  /** Why. */
  reason: string;
  /** When an operator asked for this renewal or retry (ms since epoch); it skips a failure's pause once. */
  askedAtMs?: number;
}

/** What {@link certificateTasks} reads. */
export interface CertificateTaskInput {
  /** Hostnames of https routes. */
  hostnames: readonly string[];
  /** The `certificates` rows. */
  rows: readonly Certificate[];
  /** Now. */
  now: Date;
  /** The Cluster's internal root certificate (PEM), when a usable one exists. */
  rootPem?: string;
}

/** The hostnames whose certificate must be obtained or renewed, sorted by hostname. */
export function certificateTasks(input: CertificateTaskInput): CertificateTask[] {
  const byName = new Map(input.rows.map((r) => [r.name, r]));
  const out: CertificateTask[] = [];
  for (const hostname of [...new Set(input.hostnames)].sort()) {
    if (hostnameProblem(hostname) !== null) continue;
    const row = byName.get(hostname);
    if (row?.source === "operator") continue;
    const issuer = internalName(hostname, row) ? "internal" : "acme";
    const read = usableCertificate(row, input.now);
    const asked = typeof row?.renew_requested_at === "string" ? Date.parse(row.renew_requested_at) : NaN;
    if (!read.ok) {
      const task: CertificateTask = { hostname, kind: "issue", issuer, reason: read.reason };
      // An operator's retry of a failing first issuance skips the failure's pause, as a renewal request does.
      if (Number.isFinite(asked)) task.askedAtMs = asked;
      out.push(task);
      continue;
    }
    const renewed = typeof row?.renewed_at === "string" ? Date.parse(row.renewed_at) : 0;
    if (Number.isFinite(asked) && asked > renewed) {
      out.push({ hostname, kind: "renew", issuer, reason: "renewal asked for", askedAtMs: asked });
    } else if (
      issuer === "internal" && input.rootPem !== undefined && !issuedByRoot(read.cert.pem, input.rootPem)
    ) {
      // Opted in while it had another certificate, or signed by a root that lost the Cluster row's merge.
      out.push({ hostname, kind: "renew", issuer, reason: "not signed by the Cluster's internal root" });
    } else if (renewalDue(read.cert).getTime() <= input.now.getTime()) {
      out.push({
        hostname,
        kind: "renew",
        issuer,
        reason: `expires at ${read.cert.notAfter.toISOString()}`,
      });
    }
  }
  return out;
}

/**
 * The Machine that asks the CA: the smallest id among Machines not observed Down. One asker per Cluster view
 * keeps orders to one per name; two askers after a partition race, and the certificate row's last writer wins.
 */
export function certificateAsker(
  machineIds: readonly string[],
  down: ReadonlySet<string>,
): string | undefined {
  return [...machineIds].filter((id) => !down.has(id)).sort()[0];
}

/** The pause before retrying after `failures` failed attempts in a row, jittered by `random` in [0, 1). */
export function retryPauseMs(failures: number, random: number): number {
  const base = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** Math.max(0, failures - 1));
  return Math.round(base * (0.75 + 0.5 * random));
}
