import assert from "node:assert/strict";
import { join } from "node:path";
import {
  ensurePrivateKeyFile,
  generatePrivateKey,
  isWireGuardKey,
  publicKeyOf,
  readPrivateKeyFile,
  writePrivateKeyFile,
} from "./keys.ts";
import { tempDir } from "../util/testing/mod.ts";

Deno.test("publicKeyOf() matches the RFC 7748 X25519 test vector", () => {
  // RFC 7748 §6.1: Alice's private and public keys.
  const hex = (h: string) => btoa(String.fromCharCode(...h.match(/../g)!.map((b) => parseInt(b, 16))));
  const privateKey = hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
  const publicKey = hex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
  assert.equal(publicKeyOf(privateKey), publicKey);
});

Deno.test("generatePrivateKey() makes distinct WireGuard keys", () => {
  const a = generatePrivateKey();
  const b = generatePrivateKey();
  assert.notEqual(a, b);
  assert.ok(isWireGuardKey(a) && isWireGuardKey(publicKeyOf(a)));
  assert.equal(isWireGuardKey("short"), false);
  assert.equal(isWireGuardKey(a.slice(0, 42) + "B="), false);
});

Deno.test("publicKeyOf() never echoes a bad private key", () => {
  const secret = "not-a-key-but-secret-looking";
  assert.throws(() => publicKeyOf(secret), (e: Error) => !e.message.includes(secret));
});

Deno.test("writePrivateKeyFile() writes mode 0600 and ensurePrivateKeyFile() reuses it", async () => {
  await using tmp = await tempDir();
  const dir = tmp.path;
  const path = join(dir, "keys", "wg.key");
  const first = await ensurePrivateKeyFile(path);
  assert.equal(first.generated, true);
  assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
  const again = await ensurePrivateKeyFile(path);
  assert.deepEqual(again, { publicKey: first.publicKey, generated: false });
  const other = generatePrivateKey();
  await writePrivateKeyFile(path, other);
  assert.equal(await readPrivateKeyFile(path), other);
  assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
  await Deno.writeTextFile(path, "garbage\n");
  await assert.rejects(readPrivateKeyFile(path), /expected 32 bytes in base64/);
});
