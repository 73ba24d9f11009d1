// What an end-to-end test needs from the host, said once per test: `Deno.test(needs(["docker"], {...}))`.
// Without it the test is ignored on a developer's host, and fails at once naming what is missing under CI=true,
// so CI never passes by skipping.
import { join } from "node:path";
import { missingCommands } from "../../lib/lab/mod.ts";
import { exists } from "./spawn.ts";

/** The Docker socket the tests use (`PLOYZ_DOCKER_SOCKET`, else the system one). */
export const DOCKER_SOCKET: string = Deno.env.get("PLOYZ_DOCKER_SOCKET") ?? "/var/run/docker.sock";

/**
 * One thing a test needs:
 * - `docker`: the Docker socket answers at {@link DOCKER_SOCKET};
 * - `root`: Linux and uid 0;
 * - `engine`: root, the Docker socket, and `dockerd`/`docker` on PATH, to start a throwaway dockerd;
 * - `lab`: root, the Docker socket and every command `ployz lab` runs;
 * - `wireguard`: root and `ip`, `wg`, `wireguard-go`, `nsenter`, `ping`;
 * - `image:<ref>`: that image is on the Docker engine;
 * - `command:<name>`: that program is on PATH;
 * - `path:<file>`: that file exists (a device, a socket).
 */
export type Need =
  | "docker"
  | "root"
  | "engine"
  | "lab"
  | "wireguard"
  | `image:${string}`
  | `command:${string}`
  | `path:${string}`;

const SEARCH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

/** True when `path` is a unix socket. */
export function isSocket(path: string): boolean {
  try {
    return Deno.statSync(path).isSocket === true;
  } catch {
    return false;
  }
}

function onPath(command: string): boolean {
  const dirs = [...(Deno.env.get("PATH") ?? "").split(":").filter((d) => d !== ""), ...SEARCH];
  return dirs.some((dir) => {
    try {
      return Deno.statSync(join(dir, command)).isFile;
    } catch {
      return false;
    }
  });
}

function haveImage(ref: string): boolean {
  if (!isSocket(DOCKER_SOCKET) || !onPath("docker")) return false;
  try {
    return new Deno.Command("docker", {
      args: ["-H", `unix://${DOCKER_SOCKET}`, "image", "inspect", ref],
      stdout: "null",
      stderr: "null",
    }).outputSync().success;
  } catch {
    return false;
  }
}

const ROOT_ONLY = (): string | undefined =>
  Deno.build.os !== "linux" ? "not Linux" : Deno.uid() !== 0 ? "not root" : undefined;

/** Why this host lacks `need`, or undefined when it has it. */
export function lacking(need: Need): string | undefined {
  const docker = (): string | undefined =>
    isSocket(DOCKER_SOCKET) ? undefined : `no Docker socket at "${DOCKER_SOCKET}"`;
  const commands = (names: string[]): string | undefined => {
    const missing = names.filter((c) => !onPath(c));
    return missing.length === 0 ? undefined : `missing ${missing.join(", ")}`;
  };
  switch (need) {
    case "docker":
      return docker();
    case "root":
      return ROOT_ONLY();
    case "engine":
      return ROOT_ONLY() ?? docker() ?? commands(["dockerd", "docker"]);
    case "lab": {
      const missing = missingCommands();
      return ROOT_ONLY() ?? docker() ??
        (missing.length > 0 ? `missing ${missing.map((m) => m.command).join(", ")}` : undefined);
    }
    case "wireguard":
      return ROOT_ONLY() ?? commands(["ip", "wg", "wireguard-go", "nsenter", "ping"]);
  }
  if (need.startsWith("image:")) {
    const ref = need.slice("image:".length);
    return haveImage(ref) ? undefined : `no image "${ref}" on "${DOCKER_SOCKET}" (see .ci/images*.sh)`;
  }
  if (need.startsWith("command:")) return commands([need.slice("command:".length)]);
  const path = need.slice("path:".length);
  return exists(path) ? undefined : `no "${path}"`;
}

/**
 * `definition` as a test that needs `what`: ignored on a host that lacks any of it, unless CI is set; then it runs
 * and fails first thing, naming what is missing.
 */
export function needs(what: Need[], definition: Deno.TestDefinition): Deno.TestDefinition {
  const missing = what.map(lacking).filter((why) => why !== undefined);
  if (missing.length === 0) return definition;
  const inCi = Deno.env.get("CI") !== undefined;
  return {
    ...definition,
    ignore: definition.ignore === true || !inCi,
    fn(): never {
      throw new Error(`"${definition.name}" needs what this host lacks: ${missing.join("; ")}`);
    },
  };
}
