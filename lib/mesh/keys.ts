/**
 * WireGuard keys: X25519 key pairs in the base64 form `wg genkey` and `wg pubkey` use. A private key goes to disk
 * only through {@link writePrivateKeyFile} (mode 0600) and never appears in a message, a log or a command line.
 *
 * @module
 */

import { x25519 } from "@noble/curves/ed25519.js";
import { dirname } from "node:path";
import { writeFileAtomic } from "../util/mod.ts";
import { MeshError } from "./errors.ts";

function toBase64(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes));
}

/** Decodes a base64 WireGuard key; `undefined` unless it is exactly 32 bytes in canonical base64. */
export function decodeKey(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/.test(text)) return undefined;
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/** Whether `text` is a WireGuard key (32 bytes, base64, 44 characters). */
export function isWireGuardKey(text: string): boolean {
  return decodeKey(text) !== undefined;
}

/** Generates a private key (base64, like `wg genkey`). Keep it in memory only until it is written to its file. */
export function generatePrivateKey(): string {
  return toBase64(x25519.utils.randomSecretKey());
}

/** Derives the public key of a private key (like `wg pubkey`). */
export function publicKeyOf(privateKey: string): string {
  const secret = decodeKey(privateKey);
  // Say what, never the value: it is key material.
  if (secret === undefined) {
    throw new MeshError(
      "invalid_argument",
      "Cannot use the WireGuard private key: expected 32 bytes in base64",
    );
  }
  return toBase64(x25519.getPublicKey(secret));
}

/** Parses a public key, refusing anything that is not a WireGuard key. */
export function parsePublicKey(text: string): Uint8Array {
  const key = decodeKey(text);
  if (key === undefined) {
    throw new MeshError(
      "invalid_argument",
      `Cannot parse WireGuard public key "${text}": expected 32 bytes in base64`,
    );
  }
  return key;
}

/**
 * Writes a private key to `path` with mode 0600, atomically and durably,
 * so a crash leaves either the old file or the new one and no reader ever sees a wider mode.
 */
export async function writePrivateKeyFile(path: string, privateKey: string): Promise<void> {
  publicKeyOf(privateKey);
  await Deno.mkdir(dirname(path), { recursive: true, mode: 0o700 });
  await writeFileAtomic(path, privateKey + "\n", { mode: 0o600 });
}

/** Reads a private key file written by {@link writePrivateKeyFile} (or `wg genkey`). */
export async function readPrivateKeyFile(path: string): Promise<string> {
  let text: string;
  try {
    text = (await Deno.readTextFile(path)).trim();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new MeshError("not_found", `Cannot read WireGuard private key "${path}": no such file`);
    }
    throw error;
  }
  if (!isWireGuardKey(text)) {
    throw new MeshError(
      "invalid_argument",
      `Cannot read WireGuard private key "${path}": expected 32 bytes in base64`,
    );
  }
  return text;
}

/** Reads the private key at `path`, generating and writing one first if the file does not exist. */
export async function ensurePrivateKeyFile(path: string): Promise<{ publicKey: string; generated: boolean }> {
  try {
    return { publicKey: publicKeyOf(await readPrivateKeyFile(path)), generated: false };
  } catch (error) {
    if (!(error instanceof MeshError && error.code === "not_found")) throw error;
  }
  const privateKey = generatePrivateKey();
  await writePrivateKeyFile(path, privateKey);
  return { publicKey: publicKeyOf(privateKey), generated: true };
}
