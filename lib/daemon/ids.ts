/**
 * Ids a Machine mints on its own (docs/bets.md, bet 5): no registry, no coordination, 130 bits of randomness.
 *
 * @module
 */

const ALPHABET = "abcdefghijklmnopqrstuvwxyz234567";

/** 26 lowercase base32 characters from the system's random source, e.g. `k3v9…`. */
export function mintId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(26));
  let out = "";
  // 256 is a multiple of 32, so taking the low five bits keeps every character equally likely.
  for (const byte of bytes) out += ALPHABET[byte & 31];
  return out;
}

/** Whether `value` has the shape {@link mintId} produces. */
export function isMintedId(value: unknown): value is string {
  return typeof value === "string" && /^[a-z2-7]{26}$/.test(value);
}
