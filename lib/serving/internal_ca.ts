/**
 * The Cluster's internal root: one certificate authority per Cluster for https names no public CA can validate
 * (`.internal` names, and names an operator opts in with `ployz cert add HOST --internal`). Its certificate and key
 * are one name-keyed `cluster` setting row ({@link INTERNAL_ROOT_SETTING}, last writer wins), made by the first
 * Machine that needs it; a leaf is issued by one Machine and written as an ordinary `certificates` row (source
 * `internal`), so every Machine's Ingress Proxy serves the same certificate, and a client trusts the Cluster by
 * trusting the one root (`ployz cert root`).
 *
 * Certificates are built by `@peculiar/x509` (a maintained X.509 library over WebCrypto) with ECDSA P-256 keys from
 * WebCrypto: ployz writes no ASN.1 or signature code. Rows are read back with `node:crypto`.
 *
 * @module
 */

import type * as x509Module from "@peculiar/x509";
import { createPrivateKey, X509Certificate } from "node:crypto";
import type { ClusterSetting, Store } from "../store/mod.ts";
import { hostnameProblem } from "./certificates.ts";

/** The `cluster` setting that holds the internal root. */
export const INTERNAL_ROOT_SETTING = "internal_ca";
/** The root's lifetime. */
const ROOT_LIFETIME_MS = 10 * 365 * 24 * 3600_000;
/** A leaf's lifetime; it is renewed like any certificate, 30 days before expiry. */
const LEAF_LIFETIME_MS = 90 * 24 * 3600_000;
/** A leaf is valid from a little before it is made, for clients whose clock is behind. */
const BACKDATE_MS = 3600_000;
const ALGORITHM = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
const MAX_PEM = 65_536;
const MAX_KEY = 16_384;

/** The internal root as read from its row: never printed with its key. */
export interface ClusterRoot {
  /** Root certificate, PEM. */
  pem: string;
  /** Root private key, PEM (PKCS#8). */
  key: string;
  /** SHA-256 fingerprint of the certificate, hex with colons. */
  fingerprint: string;
  /** Subject's distinguished name. */
  subject: string;
  /** Expiry. */
  notAfter: Date;
  /** The Machine that made it, as its row says. */
  createdBy?: string;
  /** When it was made, as its row says. */
  createdAt?: string;
}

/**
 * @peculiar/x509 (with its ASN.1 schemas) is loaded when an internal certificate is first made, not by every
 * `ployzd serve`; the literal specifier keeps it in a compiled binary.
 */
async function loadX509(): Promise<typeof x509Module> {
  const x509 = await import("@peculiar/x509");
  x509.cryptoProvider.set(crypto);
  return x509;
}

/** Reads the root row (untrusted: any Machine may have written it), or explains why it cannot sign. Never throws. */
export function readClusterRoot(
  row: ClusterSetting | undefined,
  now: Date,
): { ok: true; root: ClusterRoot } | { ok: false; reason: string } {
  if (row === undefined) return { ok: false, reason: "no Cluster root yet" };
  const value = row.value as Record<string, unknown> | undefined;
  const pem = value?.pem;
  const key = value?.key;
  if (typeof pem !== "string" || typeof key !== "string" || pem.length > MAX_PEM || key.length > MAX_KEY) {
    return { ok: false, reason: "the Cluster root row holds no certificate and key" };
  }
  try {
    const cert = new X509Certificate(pem);
    if (!cert.ca || !cert.verify(cert.publicKey)) {
      return { ok: false, reason: "the Cluster root row is not a self-signed CA certificate" };
    }
    if (!cert.checkPrivateKey(createPrivateKey(key))) {
      return { ok: false, reason: "the Cluster root's key does not match its certificate" };
    }
    const notAfter = new Date(cert.validTo);
    if (notAfter.getTime() <= now.getTime()) {
      return { ok: false, reason: `the Cluster root expired at ${notAfter.toISOString()}` };
    }
    const text = (name: string): string | undefined =>
      typeof value?.[name] === "string" ? (value[name] as string).slice(0, 256) : undefined;
    return {
      ok: true,
      root: {
        pem,
        key,
        fingerprint: cert.fingerprint256,
        subject: cert.subject.replaceAll("\n", ", "),
        notAfter,
        createdBy: text("created_by"),
        createdAt: text("created_at"),
      },
    };
  } catch (error) {
    return { ok: false, reason: `unreadable Cluster root: ${(error as Error).message}` };
  }
}

// One root made per store at a time: two tasks needing it at once share it instead of overwriting each other's.
const making = new WeakMap<Store, Promise<ClusterRoot>>();

/**
 * The Cluster root this store holds, made and written now when there is none usable. Two Machines that make one
 * at once (a partition) converge on the row's last writer; leaves signed by the other are issued again.
 */
export function ensureClusterRoot(store: Store, now: Date = new Date()): Promise<ClusterRoot> {
  const read = readClusterRoot(store.cluster.get(INTERNAL_ROOT_SETTING), now);
  if (read.ok) return Promise.resolve(read.root);
  let pending = making.get(store);
  if (pending === undefined) {
    pending = makeRoot(store, now).finally(() => making.delete(store));
    making.set(store, pending);
  }
  return pending;
}

async function makeRoot(store: Store, now: Date): Promise<ClusterRoot> {
  const x509 = await loadX509();
  const keys = await crypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"]) as CryptoKeyPair;
  const tag = serialNumber().slice(0, 8);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: `O=ployz, CN=ployz internal root ${tag}`,
    keys,
    signingAlgorithm: ALGORITHM,
    notBefore: new Date(now.getTime() - BACKDATE_MS),
    notAfter: new Date(now.getTime() + ROOT_LIFETIME_MS),
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const key = x509.PemConverter.encode(
    await crypto.subtle.exportKey("pkcs8", keys.privateKey),
    "PRIVATE KEY",
  );
  const row: ClusterSetting = {
    name: INTERNAL_ROOT_SETTING,
    value: {
      pem: cert.toString("pem"),
      key,
      "created_by": store.siteId,
      "created_at": now.toISOString(),
    },
  };
  const read = readClusterRoot(row, now);
  if (!read.ok) throw new Error(`the Cluster root just made cannot be used: ${read.reason}`);
  store.cluster.put(row);
  return read.root;
}

/** A leaf certificate issued by the Cluster root. */
export interface InternalCertificate {
  /** The leaf, PEM (the root is not in the chain: clients trust it themselves). */
  pem: string;
  /** Its private key, PEM (PKCS#8). */
  key: string;
  /** The root that signed it. */
  root: ClusterRoot;
}

/** Issues a leaf for `hostname` from the Cluster root (made first when there is none). */
export async function issueInternalCertificate(
  store: Store,
  hostname: string,
  now: Date = new Date(),
): Promise<InternalCertificate> {
  const problem = hostnameProblem(hostname);
  if (problem !== null) throw new Error(problem);
  const root = await ensureClusterRoot(store, now);
  const x509 = await loadX509();
  const issuer = new x509.X509Certificate(root.pem);
  const signingKey = await crypto.subtle.importKey(
    "pkcs8",
    x509.PemConverter.decodeFirst(root.key),
    ALGORITHM,
    false,
    ["sign"],
  );
  const keys = await crypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"]) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: `CN=${hostname}`,
    issuer: issuer.subject,
    publicKey: keys.publicKey,
    signingKey,
    signingAlgorithm: ALGORITHM,
    notBefore: new Date(now.getTime() - BACKDATE_MS),
    notAfter: new Date(Math.min(now.getTime() + LEAF_LIFETIME_MS, root.notAfter.getTime())),
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([{ type: "dns", value: hostname }]),
      await x509.AuthorityKeyIdentifierExtension.create(issuer),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const key = x509.PemConverter.encode(
    await crypto.subtle.exportKey("pkcs8", keys.privateKey),
    "PRIVATE KEY",
  );
  return { pem: cert.toString("pem"), key, root };
}

// 16 random bytes, the top bit clear so the DER integer stays positive; never zero.
function serialNumber(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] = (bytes[0] & 0x7f) | 0x01;
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}
