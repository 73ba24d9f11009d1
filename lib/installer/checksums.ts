/**
 * SHA256SUMS: the published checksum of each artifact. An artifact is accepted only when SHA256SUMS names it
 * exactly once and its bytes hash to that value. This protects integrity under the trusted release source; it
 * is no proof against a compromised source.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { InstallError } from "./errors.ts";

/** Parses `sha256sum` output (`<64 hex>  <name>` or `<64 hex> *<name>`) into name → digest. */
export function parseSha256Sums(text: string): Map<string, string> {
  const sums = new Map<string, string>();
  const seen = new Set<string>();
  for (const [index, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "") continue;
    const match = line.match(/^([0-9a-fA-F]{64}) [ *](.+)$/);
    if (!match) {
      throw new InstallError(
        "unavailable",
        `Cannot parse SHA256SUMS: line ${index + 1} is not "<sha256>  <name>"`,
      );
    }
    const name = match[2].replace(/^\.\//, "");
    if (seen.has(name)) {
      throw new InstallError("unavailable", `Cannot trust SHA256SUMS: it lists "${name}" more than once`);
    }
    seen.add(name);
    sums.set(name, match[1].toLowerCase());
  }
  return sums;
}

/** The SHA-256 of a file, as lowercase hex. */
export async function sha256File(path: string): Promise<string> {
  const hash = createHash("sha256");
  // The stream closes the file when it ends or fails.
  const file = await Deno.open(path, { read: true });
  for await (const chunk of file.readable) hash.update(chunk);
  return hash.digest("hex");
}

/** Refuses `path` unless SHA256SUMS lists `name` and the file's digest matches it; returns the digest. */
export async function verifyArtifact(path: string, name: string, sums: Map<string, string>): Promise<string> {
  const expected = sums.get(name);
  if (expected === undefined) {
    throw new InstallError("unavailable", `Cannot verify "${name}": SHA256SUMS does not list it`);
  }
  const actual = await sha256File(path);
  if (actual !== expected) {
    throw new InstallError(
      "unavailable",
      `Refusing "${name}": its SHA-256 is "${actual}" but SHA256SUMS says "${expected}"`,
      { expected, actual },
    );
  }
  return actual;
}
