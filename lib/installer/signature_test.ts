import { equal, match, rejects, throws } from "node:assert/strict";
import { join } from "node:path";
import { TEST_RELEASE_PUBLIC_KEY, TEST_RELEASE_SECRET_KEY } from "../../tools/release_test_key.ts";
import { InstallError } from "./errors.ts";
import { openReleaseSource } from "./release.ts";
import {
  publicKeyOf,
  RELEASE_PUBLIC_KEY,
  releasePublicKey,
  SIGNATURE_FILE,
  signSums,
  verifySumsSignature,
} from "./signature.ts";
import { acquire, verify } from "./stage.ts";
import { tempDir } from "../util/testing/mod.ts";

const secret = Uint8Array.from(atob(TEST_RELEASE_SECRET_KEY), (c) => c.charCodeAt(0));
const testKey = Uint8Array.from(atob(TEST_RELEASE_PUBLIC_KEY), (c) => c.charCodeAt(0));
const sums = new TextEncoder().encode(`${"a".repeat(64)}  ployz-0.1.0-x86_64-unknown-linux-gnu.tar.gz\n`);

Deno.test("install.sh and ployzd install trust the same release key", async () => {
  const script = await Deno.readTextFile(new URL("../../install.sh", import.meta.url));
  equal(/^RELEASE_PUBLIC_KEY=(\S+)$/m.exec(script)?.[1], RELEASE_PUBLIC_KEY);
  equal(publicKeyOf(secret), TEST_RELEASE_PUBLIC_KEY);
});

Deno.test("verifySumsSignature() accepts the key's signature only", () => {
  const signature = signSums(sums, secret);
  verifySumsSignature("0.1.0", sums, signature, testKey);
  const tampered = sums.slice();
  tampered[0] = 0x62;
  const refused = (e: unknown): boolean =>
    e instanceof InstallError && e.code === "unavailable" &&
    e.message === "Refusing release 0.1.0: its SHA256SUMS is not signed by the release key";
  throws(() => verifySumsSignature("0.1.0", tampered, signature, testKey), refused);
  throws(
    () => verifySumsSignature("0.1.0", sums, signature, releasePublicKey("/r", () => undefined)),
    refused,
  );
  throws(() => verifySumsSignature("0.1.0", sums, "not base64!", testKey), refused);
  throws(() => verifySumsSignature("0.1.0", sums, btoa("short"), testKey), refused);
});

Deno.test("a test key is honoured for local and http sources, never for https", () => {
  equal(
    btoa(String.fromCharCode(...releasePublicKey("https://ployz.sh", () => undefined))),
    RELEASE_PUBLIC_KEY,
  );
  equal(
    btoa(String.fromCharCode(...releasePublicKey("/releases", () => TEST_RELEASE_PUBLIC_KEY))),
    TEST_RELEASE_PUBLIC_KEY,
  );
  equal(
    btoa(String.fromCharCode(...releasePublicKey("http://127.0.0.1:1", () => TEST_RELEASE_PUBLIC_KEY))),
    TEST_RELEASE_PUBLIC_KEY,
  );
  throws(
    () => releasePublicKey("https://ployz.sh", () => TEST_RELEASE_PUBLIC_KEY),
    /honoured only with an http/,
  );
  throws(() => releasePublicKey("/releases", () => "c2hvcnQ="), /expected base64 of 32 bytes/);
});

Deno.test("ployzd install refuses a staged release with tampered sums before unpacking", async () => {
  await using baseDir = await tempDir("ployz-signed-");
  const base = baseDir.path;
  const name = "ployz-0.1.0-x86_64-unknown-linux-gnu.tar.gz";
  await Deno.mkdir(join(base, "source", "0.1.0"), { recursive: true });
  await Deno.mkdir(join(base, "staging"));
  const artifact = new TextEncoder().encode("artifact");
  await Deno.writeFile(join(base, "source", "0.1.0", name), artifact);
  const digest = Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", artifact)))
    .map((b) => b.toString(16).padStart(2, "0")).join("");
  const goodSums = new TextEncoder().encode(`${digest}  ${name}\n`);
  await Deno.writeFile(join(base, "source", "0.1.0", "SHA256SUMS"), goodSums);
  await Deno.writeTextFile(join(base, "source", "0.1.0", SIGNATURE_FILE), signSums(goodSums, secret));
  const source = openReleaseSource(join(base, "source"));
  const staged = await acquire(source, "0.1.0", "x86_64-unknown-linux-gnu", join(base, "staging"));
  equal(await verify(staged, testKey), digest);
  await rejects(verify(staged), /not signed by the release key/);
  await Deno.writeTextFile(join(base, "source", "0.1.0", "SHA256SUMS"), `${"0".repeat(64)}  ${name}\n`);
  const tampered = await acquire(source, "0.1.0", "x86_64-unknown-linux-gnu", join(base, "staging"));
  await rejects(verify(tampered, testKey), /Refusing release 0\.1\.0: its SHA256SUMS is not signed/);
});

Deno.test("an http source's credentials travel as a header and never appear in an error", async () => {
  let authorization: string | null = null;
  await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    authorization = request.headers.get("authorization");
    return new Response("nope", { status: 500 });
  });
  const base = `http://deploy:s3cret-token@127.0.0.1:${server.addr.port}/releases`;
  const source = openReleaseSource(base);
  const error = await source.readText(["v0", "stable"]).then(() => undefined, (e: unknown) => e);
  if (!(error instanceof InstallError)) throw new Error(`expected an InstallError, got ${error}`);
  equal(authorization, `Basic ${btoa("deploy:s3cret-token")}`);
  equal(error.message.includes("s3cret"), false, error.message);
  match(error.message, /Cannot fetch "http:\/\/127\.0\.0\.1:\d+\/releases\/v0\/stable": HTTP 500/);
  const missing = openReleaseSource(`http://deploy:s3cret-token@127.0.0.1:9/releases`);
  const refused = await missing.readText(["v0", "stable"]).then(() => undefined, (e: unknown) => e);
  equal(String(refused).includes("s3cret"), false, String(refused));
});
