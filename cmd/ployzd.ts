/**
 * `ployzd`: the Ployz Machine daemon. Parses the subcommand and runs it; nothing else lives here.
 *
 * Launched through `bin/ployzd`, each subcommand already runs under its own permission set (`-P=<set>`). A
 * compiled binary holds the union of the sets, so it (or `PLOYZ_SUBCOMMAND_ISOLATION=worker`) runs the subcommand
 * in a Worker narrowed to its set.
 *
 * @module
 */
import { dispatch, processIo } from "../lib/cli/mod.ts";
import { layoutFromEnv, permissionSet, relocate, runInWorker } from "../lib/permissions/mod.ts";
import { ployzd, subcommandSet } from "./ployzd/program.ts";

/** Runs `ployzd` with `args` and returns the exit code. */
export async function main(args: string[]): Promise<number> {
  if (Deno.build.standalone || Deno.env.get("PLOYZ_SUBCOMMAND_ISOLATION") === "worker") {
    const layout = layoutFromEnv((k) => Deno.env.get(k));
    let set = relocate(permissionSet(subcommandSet(args[0])), layout);
    if (args[0] === "install") {
      // As bin/ployzd does: the install set plus only the host of this invocation's release source.
      const installer = await import("../lib/installer/mod.ts");
      const paths = { ...installer.DEFAULT_INSTALL_PATHS, layout };
      set = installer.withReach(set, await installer.installReach(paths, args.slice(1)));
    }
    return await runInWorker(new URL("./ployzd_worker.ts", import.meta.url), set, { args });
  }
  return await dispatch(ployzd, args, processIo());
}

// Exits once the subcommand returns: a stopped daemon must not linger on a handle something left open.
if (import.meta.main) Deno.exit(await main(Deno.args));
