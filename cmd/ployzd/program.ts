import { type Command, lazyCommand } from "../../lib/cli/mod.ts";
import { versionCommand } from "../shared_version.ts";

/**
 * The `ployzd` command tree. Each top-level subcommand runs under the deno.json permission set of the same
 * name (see {@link subcommandSet}), and each is imported only when it runs: `ployzd dns` never loads Docker,
 * the store or the planner.
 */
export const ployzd: Command = {
  name: "ployzd",
  summary: "The Ployz Machine daemon and its narrowly permitted helpers",
  subcommands: [
    lazyCommand(
      "serve",
      "Run the Machine daemon: Machine RPC, Docker, mesh, replicated store",
      () => import("./serve.ts").then((m) => m.serve),
    ),
    lazyCommand(
      "dns",
      "Serve Internal DNS from /run/ployz/dns.json",
      () => import("./dns.ts").then((m) => m.dns),
    ),
    lazyCommand(
      "observe",
      "Run the Observe Store: this Machine's logs and metrics",
      () => import("./observe.ts").then((m) => m.observe),
    ),
    lazyCommand(
      "install",
      "Install or upgrade Ployz on this Machine",
      () => import("./install.ts").then((m) => m.install),
    ),
    lazyCommand(
      "dial-stdio",
      "Bridge stdin/stdout to the local Machine RPC socket (for SSH access)",
      () => import("./dial_stdio.ts").then((m) => m.dialStdio),
    ),
    lazyCommand(
      "systemd",
      "The daemon's door to systemd: Ployz runtime units and upgrade workers only",
      () => import("./systemd.ts").then((m) => m.systemdDoor),
    ),
    versionCommand("ployzd"),
  ],
};

const SETS: Record<string, string> = {
  serve: "serve",
  dns: "dns",
  observe: "observe",
  install: "install",
  "dial-stdio": "dial-stdio",
  systemd: "systemd",
};

/** The permission set a `ployzd` subcommand runs under; `none` for help, version and anything unknown. */
export function subcommandSet(subcommand: string | undefined): string {
  return (subcommand !== undefined && SETS[subcommand]) || "none";
}
