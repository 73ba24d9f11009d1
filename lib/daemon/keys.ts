/**
 * The Machine's keys. The WireGuard key pair (X25519): the private key lives only in `<dataDir>/keys/wg.key` (mode
 * 0600, base64 like `wg genkey`). The Ed25519 key that signs its replicated changes: `<dataDir>/keys/sign.key`.
 * Neither secret is ever logged, sent or copied into another file.
 *
 * @module
 */

import { dirname, join } from "node:path";
import { ensurePrivateKeyFile } from "../mesh/mod.ts";
import { generateSigningSecret } from "../store/mod.ts";
import { writeFileAtomic } from "../util/mod.ts";

/** The public half of the Machine's key pair; the private half stays in its file. */
export interface PublicKey {
  /** Base64, 44 characters. */
  publicKey: string;
  /** Whether this call generated the key pair. */
  generated: boolean;
}

function toBase64(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes));
}

function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/** Where the private key lives. */
export function keyPath(dataDir: string): string {
  return join(dataDir, "keys", "wg.key");
}

// Reads a 32-byte secret kept in base64 at `path`, minting it (mode 0600) on first use.
async function ensureSecret(
  path: string,
  what: string,
  mint: () => Uint8Array,
): Promise<{ secret: Uint8Array; generated: boolean }> {
  let text: string | undefined;
  try {
    text = (await Deno.readTextFile(path)).trim();
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  if (text !== undefined) {
    let secret: Uint8Array;
    try {
      secret = fromBase64(text);
    } catch {
      secret = new Uint8Array();
    }
    if (secret.length !== 32) {
      // Say where, never what: the file holds key material.
      throw new Error(`Cannot read the ${what} "${path}": expected 32 bytes in base64`);
    }
    return { secret, generated: false };
  }
  await Deno.mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const secret = mint();
  await writeFileAtomic(path, toBase64(secret) + "\n", { mode: 0o600 });
  return { secret, generated: true };
}

/** Reads the key pair, generating it on first use (lib/mesh's key file), and returns the public key. */
export function ensureKeyPair(dataDir: string): Promise<PublicKey> {
  return ensurePrivateKeyFile(keyPath(dataDir));
}

/** Where the Ed25519 secret that signs this Machine's replicated changes lives. */
export function signingKeyPath(dataDir: string): string {
  return join(dataDir, "keys", "sign.key");
}

/** Reads the signing secret, minting it on first use; the public half goes into the Machine row. */
export async function ensureSigningSecret(dataDir: string): Promise<Uint8Array> {
  return (await ensureSecret(signingKeyPath(dataDir), "signing key", generateSigningSecret)).secret;
}
