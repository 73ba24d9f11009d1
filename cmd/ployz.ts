/**
 * `ployz`: the operator's CLI. Parses the command and runs it; nothing else lives here.
 *
 * @module
 */
import { dispatch, processIo } from "../lib/cli/mod.ts";
import { traceMark } from "../lib/util/mod.ts";
import { ployz } from "./ployz/program.ts";
import { endCommand, takeGlobalFlags } from "./ployz/selection.ts";

if (import.meta.main) {
  traceMark("ployz: started");
  try {
    Deno.exitCode = await dispatch(ployz, takeGlobalFlags(Deno.args), processIo());
  } finally {
    endCommand();
  }
  // Exits once the command returned: a pending read it gave up on (stdin under `exec`, a builder's answer cut off
  // in the network whose read survived its abort) must not keep the process waiting.
  Deno.exit(Deno.exitCode);
}
