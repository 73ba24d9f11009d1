/**
 * `ployz`: the operator's CLI. Parses the command and runs it; nothing else lives here.
 *
 * @module
 */
import { dispatch, processIo } from "../lib/cli/mod.ts";
import { ployz } from "./ployz/program.ts";

if (import.meta.main) Deno.exitCode = await dispatch(ployz, Deno.args, processIo());
