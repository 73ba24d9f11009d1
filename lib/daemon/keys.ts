/**
 * The Machine's WireGuard key pair (X25519). The private key lives only in `<dataDir>/keys/wg.key` (mode 0600,
 * base64 like `wg genkey`); it is never logged, sent or copied into another file.
 *
 * @module
 */

import { x25519 } from "@noble/curves/ed25519.js";
import { join } from "node:path";
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

/** Reads the key pair, generating it on first use, and returns the public key. */
export async function ensureKeyPair(dataDir: string): Promise<PublicKey> {
  const path = keyPath(dataDir);
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
      throw new Error(`Cannot read the WireGuard private key "${path}": expected 32 bytes in base64`);
    }
    return { publicKey: toBase64(x25519.getPublicKey(secret)), generated: false };
  }
  await Deno.mkdir(join(dataDir, "keys"), { recursive: true, mode: 0o700 });
  const secret = x25519.utils.randomSecretKey();
  await writeFileAtomic(path, toBase64(secret) + "\n", { mode: 0o600 });
  return { publicKey: toBase64(x25519.getPublicKey(secret)), generated: true };
}
