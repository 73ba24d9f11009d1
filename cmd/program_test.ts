// The lazy command lists of `ployz` and `ployzd` say what the commands they load say, and every one loads.
import { equal } from "node:assert/strict";
import type { Command } from "../lib/cli/mod.ts";
import { ployz } from "./ployz/program.ts";
import { ployzd } from "./ployzd/program.ts";

async function checkTree(command: Command, path: string): Promise<number> {
  let loaded = 0;
  for (const stub of command.subcommands ?? []) {
    let sub = stub;
    if (stub.load) {
      sub = await stub.load();
      loaded++;
      equal(sub.name, stub.name, `${path} ${stub.name}`);
      equal(sub.summary, stub.summary, `the summary listed for "${path} ${stub.name}" is the command's own`);
    }
    loaded += await checkTree(sub, `${path} ${sub.name}`);
  }
  return loaded;
}

Deno.test("every lazily listed command loads, under the name and summary its parent lists", async () => {
  equal(await checkTree(ployzd, "ployzd"), 6);
  equal(await checkTree(ployz, "ployz"), 34);
});
