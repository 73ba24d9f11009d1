import { daemonEntry } from "./entry.ts";
import { permissionFlags } from "./flags.ts";
import type { Layout } from "./layout.ts";
import { relocate } from "./relocate.ts";
import { runtimeFlags } from "./runtime_flags.ts";
import { type PermissionSet, permissionSet, type PermissionSetName } from "./sets.ts";

/** How one `ployzd <subcommand>` is started: the parts that differ between its launch paths. */
export interface DaemonCommandOptions {
  /** The deno binary; default the one running this code. */
  deno?: string;
  /** How it finds its configuration, e.g. `configFlags`'s answer or `--config <tree>/deno.json`. */
  config: readonly string[];
  /** The Machine's layout, which the subcommand's permission set is relocated to. */
  layout: Layout;
  /** The tree holding `deno.json`, `cmd/ployzd.ts` and the bundle; default the tree this code runs from. */
  root?: string;
  /** What this launch grants beyond the relocated set (the lab: its own ACME CA); default nothing. */
  widen?: (set: PermissionSet) => PermissionSet;
}

/**
 * The `deno run` command line of `ployzd <subcommand>`: quiet, never prompting, with the subcommand's runtime
 * flags and its deno.json permission set, relocated to the layout, as flags. The units, the daemon's children and the lab all start it from here, so
 * their command lines differ only in what {@link DaemonCommandOptions} says.
 */
export function daemonCommand(subcommand: PermissionSetName, options: DaemonCommandOptions): string[] {
  const set = relocate(permissionSet(subcommand, options.root), options.layout);
  return [
    options.deno ?? Deno.execPath(),
    "run",
    "--quiet",
    "--no-prompt",
    ...options.config,
    ...runtimeFlags(subcommand),
    ...permissionFlags(options.widen?.(set) ?? set),
    daemonEntry(subcommand, options.root),
    subcommand,
  ];
}
