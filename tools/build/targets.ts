// Release targets and where their deno and denort binaries come from.
import { join } from "node:path";

/** A release target: a Rust-style triple plus the npm package that ships its deno binary. */
export interface Target {
  triple: string;
  npmPackage: string;
}

/** The Linux targets a release tree is built for. */
export const LINUX_TARGETS: Target[] = [
  { triple: "x86_64-unknown-linux-gnu", npmPackage: "@deno/linux-x64-glibc" },
  { triple: "aarch64-unknown-linux-gnu", npmPackage: "@deno/linux-arm64-glibc" },
];

/**
 * Targets that get the operator CLI only (`ployz-cli-<version>-<triple>.tar.gz`): macOS, where an operator drives a
 * Cluster over SSH and no daemon runs.
 */
export const CLI_TARGETS: Target[] = [
  { triple: "aarch64-apple-darwin", npmPackage: "@deno/darwin-arm64" },
  { triple: "x86_64-apple-darwin", npmPackage: "@deno/darwin-x64" },
];

/** Where `deno compile` looks for the denort runtime of `triple`, in its lookup order. */
export function denortCandidates(
  triple: string,
  denoVersion: string,
  denoDir: string,
  denoBin: string,
): string[] {
  const fromEnv = Deno.env.get("DENORT_BIN");
  return [
    ...(fromEnv ? [fromEnv] : []),
    join(denoBin, "..", "denort"),
    join(denoDir, "dl", "release", `v${denoVersion}`, `denort-${triple}.zip`),
  ];
}

/** The first existing denort candidate, or undefined with the list of places looked at. */
export function findDenort(
  triple: string,
  denoVersion: string,
  denoDir: string,
  denoBin: string,
): { found?: string; looked: string[] } {
  const looked = denortCandidates(triple, denoVersion, denoDir, denoBin);
  for (const path of looked) {
    try {
      if (Deno.statSync(path).isFile) return { found: path, looked };
    } catch {
      // Not there; try the next place.
    }
  }
  return { looked };
}

/** DENO_DIR as deno resolves it on Linux and macOS. */
export function denoDir(): string {
  const explicit = Deno.env.get("DENO_DIR");
  if (explicit) return explicit;
  const xdg = Deno.env.get("XDG_CACHE_HOME");
  if (xdg) return join(xdg, "deno");
  const home = Deno.env.get("HOME") ?? "/root";
  return Deno.build.os === "darwin" ? join(home, "Library", "Caches", "deno") : join(home, ".cache", "deno");
}
