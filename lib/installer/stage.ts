// Acquisition into private staging, checksum verification, and unpacking. Nothing here touches the running
// installation: a failure leaves it exactly as it was.
import { basename, join } from "node:path";
import { parseSha256Sums, verifyArtifact } from "./checksums.ts";
import { InstallError } from "./errors.ts";
import { execBounded, tail } from "./exec.ts";
import { artifactName, type ReleaseSource } from "./release.ts";
import { releasePublicKey, SIGNATURE_FILE, verifySumsSignature } from "./signature.ts";

/** Files of one acquired release in staging. */
export interface Acquired {
  /** The artifact's file name, e.g. `ployz-0.1.0-x86_64-unknown-linux-gnu.tar.gz`. */
  name: string;
  /** The staged tarball. */
  tarball: string;
  /** The release's SHA256SUMS text. */
  sums: string;
  /** SHA256SUMS as fetched, byte for byte: what the signature covers. */
  sumsBytes: Uint8Array;
  /** The text of SHA256SUMS.sig. */
  signature: string;
  /** The version acquired. */
  version: string;
  /** The release source it came from (which decides the key, see `releasePublicKey`). */
  sourceBase: string;
}

/** Creates the private staging directory (mode 0700), replacing leftovers of the same attempt. */
export async function makeStaging(dir: string): Promise<void> {
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  await Deno.chmod(dir, 0o700);
}

/**
 * Copies SHA256SUMS, its signature and the artifact of `version` for `triple` into `dir`. With `localTarball`, that file (which
 * must carry the artifact's name) is used instead of downloading one; SHA256SUMS still comes from the source.
 */
export async function acquire(
  source: ReleaseSource,
  version: string,
  triple: string,
  dir: string,
  localTarball?: string,
): Promise<Acquired> {
  const name = artifactName(version, triple);
  const sumsPath = join(dir, "SHA256SUMS");
  await source.download([version, "SHA256SUMS"], sumsPath);
  const signaturePath = join(dir, SIGNATURE_FILE);
  await source.download([version, SIGNATURE_FILE], signaturePath);
  const tarball = join(dir, name);
  if (localTarball !== undefined) {
    if (basename(localTarball) !== name) {
      throw new InstallError(
        "invalid_argument",
        `Refusing "${localTarball}": expected the artifact "${name}" for version "${version}"`,
      );
    }
    await Deno.copyFile(localTarball, tarball);
  } else {
    await source.download([version, name], tarball, AbortSignal.timeout(600_000));
  }
  const sumsBytes = await Deno.readFile(sumsPath);
  return {
    name,
    tarball,
    sums: new TextDecoder().decode(sumsBytes),
    sumsBytes,
    signature: await Deno.readTextFile(signaturePath),
    version,
    sourceBase: source.base,
  };
}

/**
 * Refuses the staged release unless SHA256SUMS carries the release key's signature and lists the artifact with
 * the same digest; nothing is unpacked before.
 */
export async function verify(
  acquired: Acquired,
  publicKey: Uint8Array = releasePublicKey(acquired.sourceBase),
): Promise<string> {
  verifySumsSignature(acquired.version, acquired.sumsBytes, acquired.signature, publicKey);
  return await verifyArtifact(acquired.tarball, acquired.name, parseSha256Sums(acquired.sums));
}

/** Unpacks the verified tarball under `dir/tree` and returns the release tree's root. */
export async function unpack(acquired: Acquired, dir: string): Promise<string> {
  const into = join(dir, "tree");
  await Deno.mkdir(into, { mode: 0o700 });
  const result = await execBounded("tar", ["-xzf", acquired.tarball, "-C", into, "--no-same-owner"], {
    timeoutMs: 300_000,
  });
  if (result.code !== 0) {
    throw new InstallError("unavailable", `Cannot unpack "${acquired.name}": ${tail(result.stderr)}`);
  }
  const root = join(into, acquired.name.replace(/\.tar\.gz$/, ""));
  for (const part of ["deno", "deno.json", join("bin", "ployzd"), join("cmd", "ployzd.ts")]) {
    const info = await Deno.lstat(join(root, part)).catch(() => undefined);
    if (!info?.isFile) {
      throw new InstallError("unavailable", `Refusing "${acquired.name}": the release tree has no "${part}"`);
    }
  }
  return root;
}
