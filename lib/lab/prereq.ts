/**
 * What the lab needs from the host, checked before it touches anything: Linux, root, and the commands it runs, each
 * named with the Debian package that provides it.
 *
 * @module
 */

import { join } from "node:path";
import { LabError } from "./errors.ts";

/** Each command the lab runs and the Debian package that has it. */
export const LAB_COMMANDS: Readonly<Record<string, string>> = Object.freeze({
  ip: "iproute2",
  wg: "wireguard-tools",
  "wireguard-go": "wireguard-go",
  iptables: "iptables",
  nsenter: "util-linux",
  dockerd: "docker.io",
  docker: "docker.io",
});

const PATH_DIRS = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

function onPath(cmd: string): boolean {
  const dirs = (Deno.env.get("PATH") ?? "").split(":").filter((d) => d !== "").concat(PATH_DIRS);
  return dirs.some((dir) => {
    try {
      const info = Deno.statSync(join(dir, cmd));
      return info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0;
    } catch {
      return false;
    }
  });
}

/** The commands missing from this host, with their Debian packages. */
export function missingCommands(): { command: string; package: string }[] {
  return Object.entries(LAB_COMMANDS).filter(([cmd]) => !onPath(cmd)).map(([command, pkg]) => ({
    command,
    package: pkg,
  }));
}

/** Refuses unless this is Linux, as root, with every lab command present. */
export function checkPrerequisites(): void {
  if (Deno.build.os !== "linux") {
    throw new LabError(
      "unsupported",
      `Cannot run the lab on "${Deno.build.os}": it needs Linux network namespaces`,
    );
  }
  if (Deno.uid() !== 0) {
    throw new LabError(
      "unsupported",
      "Cannot run the lab as a regular user: it creates network namespaces, run it as root",
    );
  }
  const missing = missingCommands();
  if (missing.length > 0) {
    const packages = [...new Set(missing.map((m) => m.package))].join(" ");
    const commands = missing.map((m) => `"${m.command}"`).join(", ");
    throw new LabError(
      "unavailable",
      `Cannot run the lab: missing ${commands} (apt-get install ${packages})`,
    );
  }
}
