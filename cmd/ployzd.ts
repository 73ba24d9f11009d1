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
    const set = relocate(permissionSet(subcommandSet(args[0])), layoutFromEnv((k) => Deno.env.get(k)));
    return await runInWorker(new URL("./ployzd_worker.ts", import.meta.url), set, { args });
  }
  return await dispatch(ployzd, args, processIo());
}

if (import.meta.main) Deno.exitCode = await main(Deno.args);
