import { join } from "node:path";
import { DEFAULT_LAYOUT, type Layout } from "../permissions/mod.ts";

/** Where an installation lives on a Machine. */
export interface InstallPaths {
  /** Install root: `releases/<version>/` and the `current` symlink. Default `/usr/lib/ployz`. */
  prefix: string;
  /** Where the `ployzd` and `ployz` symlinks go. Default `/usr/local/bin`. */
  binDir: string;
  /** Where unit files are written. Default `/etc/systemd/system`. */
  unitDir: string;
  /** The Machine's layout: attempts and staging under `<dataDir>/install`, the lock under `<runDir>`. */
  layout: Layout;
}

/** The paths of an installed Machine. */
export const DEFAULT_INSTALL_PATHS: Readonly<InstallPaths> = Object.freeze({
  prefix: "/usr/lib/ployz",
  binDir: "/usr/local/bin",
  unitDir: "/etc/systemd/system",
  layout: DEFAULT_LAYOUT,
});

/** `<dataDir>/install`: the installer's own state (attempts, staging, what it found before taking files over). */
export function installStateDir(paths: InstallPaths): string {
  return join(paths.layout.dataDir, "install");
}

/** `<dataDir>/install/attempts`. */
export function attemptsDir(paths: InstallPaths): string {
  return join(installStateDir(paths), "attempts");
}

/** `<dataDir>/install/staging/<attempt id>`. */
export function stagingDir(paths: InstallPaths, attemptId: string): string {
  return join(installStateDir(paths), "staging", attemptId);
}

/** `<runDir>/install.lock`. */
export function lockPath(paths: InstallPaths): string {
  return join(paths.layout.runDir, "install.lock");
}

/** `<prefix>/releases`. */
export function releasesDir(paths: InstallPaths): string {
  return join(paths.prefix, "releases");
}

/** `<prefix>/release-test-key`: the test release key a local install was given, if any. */
export function releaseTestKeyPath(paths: InstallPaths): string {
  return join(paths.prefix, "release-test-key");
}

/** `<prefix>/current`. */
export function currentLink(paths: InstallPaths): string {
  return join(paths.prefix, "current");
}
