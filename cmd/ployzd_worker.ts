/// <reference lib="deno.worker" />
// Runs one ployzd subcommand inside a Worker narrowed to that subcommand's permission set.
import { dispatch, processIo } from "../lib/cli/mod.ts";
import { ployzd } from "./ployzd/program.ts";

self.onmessage = async (event: MessageEvent<{ args: string[] }>): Promise<void> => {
  const exitCode = await dispatch(ployzd, event.data.args, processIo());
  self.postMessage({ exitCode });
};
