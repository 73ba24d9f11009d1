import { type Command, versionInfo } from "../lib/cli/mod.ts";

/** The `version` command both programs share. */
export function versionCommand(program: string): Command {
  return {
    name: "version",
    summary: `Print the version of ${program} and of its runtime`,
    usage: "[--json]",
    options: { json: { type: "boolean" } },
    run({ values, io }): Promise<number> {
      const info = versionInfo();
      if (values.json) io.out(JSON.stringify(info) + "\n");
      else io.out(`${program} ${info.version} (deno ${info.deno}, ${info.target})\n`);
      return Promise.resolve(0);
    },
  };
}
