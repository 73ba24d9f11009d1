/**
 * What `ployz cert` does to the `certificates` rows, over this Machine's copy of the store: list them (never the
 * key), ask for a renewal (the asking Machine's keeper acts on it), add an operator's certificate for a name no
 * ACME CA can reach, opt a name in to the Cluster's internal root, show that root (never its key), and remove one. Every write is a name-keyed, last-writer-wins row, replicated to every Machine.
 *
 * @module
 */

import type { CertificateWire, ClusterRootWire } from "../rpc/mod.ts";
import type { Certificate, Store } from "../store/mod.ts";
import { CodedError } from "../util/mod.ts";
import { certificateRow, hostnameProblem, usableCertificate } from "./certificates.ts";
import { INTERNAL_ROOT_SETTING, issueInternalCertificate, readClusterRoot } from "./internal_ca.ts";

/** A refused certificate operation. */
export class CertificateError extends CodedError {
  /** Names the error. */
  override name = "CertificateError";
}

/** Every certificate row, sorted by hostname, without keys. */
export function listCertificates(store: Store, now: Date = new Date()): CertificateWire[] {
  return store.certificates.list().map((row) => viewOf(store, row, now)).sort((a, b) =>
    a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : 0
  );
}

/**
 * Asks for a renewal of an ACME certificate; the asking Machine renews it on its next pass. For a name whose first
 * issuance failed (it has an error row but no certificate yet), it asks for the next attempt now instead of after
 * the failure's pause, through a certificate row that holds only the request.
 */
export function requestRenewal(store: Store, hostname: string, now: Date = new Date()): CertificateWire {
  const row = store.certificates.get(hostname);
  if (row === undefined) {
    if (store.certificateErrors.get(hostname) !== undefined && hostnameProblem(hostname) === null) {
      const request: Certificate = {
        name: hostname,
        source: "acme",
        "renew_requested_at": now.toISOString(),
      };
      store.certificates.put(request);
      return viewOf(store, request, now);
    }
    throw new CertificateError("not_found", `No certificate for "${hostname}": see "ployz cert ls"`);
  }
  if (row.source === "operator") {
    throw new CertificateError(
      "conflict",
      `The certificate for "${hostname}" was added by an operator; replace it with "ployz cert add"`,
    );
  }
  const next = { ...row, "renew_requested_at": now.toISOString() };
  store.certificates.put(next);
  return viewOf(store, next, now);
}

/** Adds (or replaces) an operator's certificate; refused unless it parses, covers `hostname` and matches `key`. */
export function addCertificate(
  store: Store,
  input: { hostname: string; pem: string; key: string },
  now: Date = new Date(),
): CertificateWire {
  const problem = hostnameProblem(input.hostname);
  if (problem !== null) throw new CertificateError("invalid_argument", `Invalid hostname: ${problem}`);
  const read = usableCertificate({ name: input.hostname, pem: input.pem, key: input.key }, now);
  if (!read.ok) {
    throw new CertificateError(
      "invalid_argument",
      `Cannot use the certificate for "${input.hostname}": ${read.reason}`,
    );
  }
  const row = certificateRow(read.cert, "operator", store.siteId, now);
  store.certificates.put(row);
  return viewOf(store, row, now);
}

/**
 * Opts `hostname` in to the Cluster's internal root (made now when there is none): a certificate is issued at once
 * and written as its row (source `internal`), served by every Machine and renewed by the asking Machine like an
 * ACME one. For names no public CA should be asked about; `.internal` names need no opt-in.
 */
export async function addInternalCertificate(
  store: Store,
  hostname: string,
  now: Date = new Date(),
): Promise<CertificateWire> {
  const problem = hostnameProblem(hostname);
  if (problem !== null) throw new CertificateError("invalid_argument", `Invalid hostname: ${problem}`);
  const issued = await issueInternalCertificate(store, hostname, now);
  const read = usableCertificate({ name: hostname, pem: issued.pem, key: issued.key }, now);
  if (!read.ok) {
    throw new CertificateError(
      "internal",
      `The internal certificate for "${hostname}" is unusable: ${read.reason}`,
    );
  }
  const row = certificateRow(read.cert, "internal", store.siteId, now);
  store.certificates.put(row);
  if (store.certificateErrors.get(hostname) !== undefined) store.certificateErrors.delete(hostname);
  return viewOf(store, row, now);
}

/** The Cluster's internal root as `ployz cert root` shows it: the certificate, never its key. */
export function clusterRootView(store: Store, now: Date = new Date()): ClusterRootWire {
  const row = store.cluster.get(INTERNAL_ROOT_SETTING);
  const read = readClusterRoot(row, now);
  if (!read.ok) {
    throw new CertificateError(
      "not_found",
      row === undefined
        ? "The Cluster has no internal root yet: it is made when a .internal https route is first served " +
          'or by "ployz cert add HOST --internal"'
        : `The Cluster's internal root cannot be used: ${read.reason}`,
    );
  }
  const view: ClusterRootWire = {
    pem: read.root.pem,
    fingerprint: read.root.fingerprint,
    subject: read.root.subject,
    "not_after": read.root.notAfter.toISOString(),
  };
  if (read.root.createdBy !== undefined) view.created_by = read.root.createdBy;
  if (read.root.createdAt !== undefined) view.created_at = read.root.createdAt;
  return view;
}

/** Removes a certificate row; its https routes wait for a new one (ACME obtains it again unless none can). */
export function removeCertificate(store: Store, hostname: string): boolean {
  if (store.certificates.get(hostname) === undefined) return false;
  store.certificates.delete(hostname);
  if (store.certificateErrors.get(hostname) !== undefined) store.certificateErrors.delete(hostname);
  return true;
}

function viewOf(store: Store, row: Certificate, now: Date): CertificateWire {
  const read = usableCertificate(row, now);
  const text = (key: string): string | undefined =>
    typeof row[key] === "string" ? row[key] as string : undefined;
  const view: CertificateWire = {
    hostname: row.name,
    source: text("source") ?? "acme",
    servable: read.ok,
  };
  if (!read.ok) view.problem = read.reason;
  const fields = {
    issuer: read.ok ? read.cert.issuer : text("issuer"),
    serial: read.ok ? read.cert.serial : text("serial"),
    "not_after": read.ok ? read.cert.notAfter.toISOString() : text("not_after"),
    "renewed_at": text("renewed_at"),
    "renewed_by": text("renewed_by"),
    "renew_requested_at": text("renew_requested_at"),
    "last_error": undefined as string | undefined,
    "last_error_at": undefined as string | undefined,
  };
  // A failure older than the certificate it failed to replace is history, not news.
  const failure = store.certificateErrors.get(row.name);
  if (failure !== undefined && !(failure.at < (fields.renewed_at ?? ""))) {
    fields.last_error = failure.error;
    fields.last_error_at = failure.at;
  }
  for (const [key, value] of Object.entries(fields)) {
    if (value !== undefined) (view as unknown as Record<string, unknown>)[key] = value;
  }
  return view;
}
