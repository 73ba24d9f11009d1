/**
 * `ployz`: the operator's CLI. Parses the command and runs it; nothing else lives here.
 *
 * @module
 */
import { dispatch, processIo } from "../lib/cli/mod.ts";
import { traceMark } from "../lib/util/mod.ts";
import { ployz } from "./ployz/program.ts";
import { endCommand, mustExit, takeGlobalFlags } from "./ployz/selection.ts";

if (import.meta.main) {
  traceMark("ployz: started");
  try {
    Deno.exitCode = await dispatch(ployz, takeGlobalFlags(Deno.args), processIo());
  } finally {
    endCommand();
  }
  if (mustExit()) Deno.exit(Deno.exitCode);
}
