/**
 * The release signature: `<version>/SHA256SUMS.sig` holds the base64 of the release key's Ed25519 signature of
 * `<version>/SHA256SUMS` (RFC 8032, via @noble/curves). SHA256SUMS binds every artifact's bytes, so a verified
 * signature makes the whole release the key holder's; it is checked before anything is unpacked, by install.sh
 * (with openssl) and by `ployzd install` (here), against the public key built into both.
 *
 * Tests sign with a test key; `PLOYZ_RELEASE_PUBLIC_KEY` names it, and is honoured only for a local or `http://`
 * source, never for an `https://` one, so it cannot redirect trust for a real install.
 *
 * @module
 */

import { ed25519 } from "@noble/curves/ed25519.js";
import { InstallError } from "./errors.ts";

/** The release key: base64 of the raw Ed25519 public key. install.sh carries the same value. */
export const RELEASE_PUBLIC_KEY = "ME3bJRDBKt6WV7hhk3eRlHX3c/SUR6I83KvYvSbh2RA=";

/** The signature file beside SHA256SUMS. */
export const SIGNATURE_FILE = "SHA256SUMS.sig";

function fromBase64(text: string): Uint8Array | undefined {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) return undefined;
  try {
    return Uint8Array.from(atob(trimmed), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

function toBase64(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes));
}

/** The public key releases from `sourceBase` must be signed with: the built-in one, or a test key (see above). */
export function releasePublicKey(
  sourceBase: string,
  env: (name: string) => string | undefined = (name) => Deno.env.get(name),
): Uint8Array {
  const override = env("PLOYZ_RELEASE_PUBLIC_KEY");
  let text = RELEASE_PUBLIC_KEY;
  if (override !== undefined && override !== "") {
    if (/^https:\/\//i.test(sourceBase)) {
      throw new InstallError(
        "invalid_argument",
        "PLOYZ_RELEASE_PUBLIC_KEY is honoured only with an http:// or local test source",
      );
    }
    text = override;
  }
  const key = fromBase64(text);
  if (key === undefined || key.length !== 32) {
    throw new InstallError("invalid_argument", "Invalid release public key: expected base64 of 32 bytes");
  }
  return key;
}

/** Refuses `sums` unless `signature` (the text of SHA256SUMS.sig) is `publicKey`'s signature of it. */
export function verifySumsSignature(
  version: string,
  sums: Uint8Array,
  signature: string,
  publicKey: Uint8Array,
): void {
  const bytes = fromBase64(signature);
  let valid = false;
  try {
    valid = bytes !== undefined && bytes.length === 64 && ed25519.verify(bytes, sums, publicKey);
  } catch {
    valid = false;
  }
  if (!valid) {
    throw new InstallError(
      "unavailable",
      `Refusing release ${version}: its SHA256SUMS is not signed by the release key`,
      { version },
    );
  }
}

/** The SHA256SUMS.sig text for `sums`, signed with a 32-byte Ed25519 secret key (`deno task dist`, tests). */
export function signSums(sums: Uint8Array, secretKey: Uint8Array): string {
  return `${toBase64(ed25519.sign(sums, secretKey))}\n`;
}

/** The base64 public key of a 32-byte Ed25519 secret key. */
export function publicKeyOf(secretKey: Uint8Array): string {
  return toBase64(ed25519.getPublicKey(secretKey));
}
