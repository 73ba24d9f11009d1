// Host prerequisites: installed only when asked (`--install-prerequisites`) or, at first setup, when missing.
// An ordinary upgrade never installs or upgrades host software.
import { InstallError } from "./errors.ts";
import { execBounded, tail } from "./exec.ts";
import { JEMALLOC_LIBRARIES } from "../permissions/mod.ts";

/** A Debian package the Machine needs and a file that shows it is present. */
export interface Prerequisite {
  /** Package name. */
  name: string;
  /** Any of these existing means present. */
  evidence: string[];
}

/** What a Machine needs from the host. */
export const PREREQUISITES: readonly Prerequisite[] = [
  { name: "docker.io", evidence: ["/usr/sbin/dockerd", "/usr/bin/dockerd"] },
  { name: "wireguard-go", evidence: ["/usr/bin/wireguard-go", "/usr/sbin/wireguard-go"] },
  { name: "wireguard-tools", evidence: ["/usr/bin/wg", "/usr/sbin/wg"] },
  // ployzd serve runs with jemalloc as its malloc where present: lower idle memory (lib/permissions/runtime_flags.ts).
  { name: "libjemalloc2", evidence: [...JEMALLOC_LIBRARIES] },
];

/** The operator's explicit choice. */
export type PrerequisiteChoice = "auto" | "install" | "skip";

/** Which packages to install: `install` asks for all, `auto` only for missing ones at first setup. */
export function prerequisitesToInstall(
  choice: PrerequisiteChoice,
  firstSetup: boolean,
  missing: string[],
): string[] {
  if (choice === "skip") return [];
  if (choice === "install") return PREREQUISITES.map((p) => p.name);
  return firstSetup ? missing : [];
}

/** The prerequisites with no evidence on this host. */
export async function missingPrerequisites(): Promise<string[]> {
  const missing: string[] = [];
  for (const p of PREREQUISITES) {
    const found = await Promise.all(p.evidence.map((e) => Deno.stat(e).then(() => true, () => false)));
    if (!found.includes(true)) missing.push(p.name);
  }
  return missing;
}

/** Installs `packages` with apt-get (lists refreshed first). */
export async function installPackages(packages: string[]): Promise<void> {
  if (packages.length === 0) return;
  const env = { DEBIAN_FRONTEND: "noninteractive" };
  const update = await execBounded("apt-get", ["update", "-q"], { timeoutMs: 300_000, env });
  if (update.code !== 0) {
    throw new InstallError(
      "unavailable",
      `Cannot refresh package lists with apt-get: ${tail(update.stderr)}`,
    );
  }
  const install = await execBounded(
    "apt-get",
    ["install", "-y", "-q", "--no-install-recommends", ...packages],
    { timeoutMs: 900_000, env },
  );
  if (install.code !== 0) {
    throw new InstallError(
      "unavailable",
      `Cannot install ${packages.map((p) => `"${p}"`).join(", ")} with apt-get: ${tail(install.stderr)}`,
    );
  }
}
