import type { Command } from "../../lib/cli/mod.ts";
import { versionCommand } from "../shared_version.ts";
import { dialStdio } from "./dial_stdio.ts";
import { dns } from "./dns.ts";
import { install } from "./install.ts";
import { observe } from "./observe.ts";
import { serve } from "./serve.ts";

/**
 * The `ployzd` command tree. Each top-level subcommand runs under the deno.json permission set of the same
 * name (see {@link subcommandSet}).
 */
export const ployzd: Command = {
  name: "ployzd",
  summary: "The Ployz Machine daemon and its narrowly permitted helpers",
  subcommands: [
    serve,
    dns,
    observe,
    install,
    dialStdio,
    versionCommand("ployzd"),
  ],
};

const SETS: Record<string, string> = {
  serve: "serve",
  dns: "dns",
  observe: "observe",
  install: "install",
  "dial-stdio": "dial-stdio",
};

/** The permission set a `ployzd` subcommand runs under; `none` for help, version and anything unknown. */
export function subcommandSet(subcommand: string | undefined): string {
  return (subcommand !== undefined && SETS[subcommand]) || "none";
}
