// Prints, one per line, the deno permission flags `bin/ployzd install ARGS` starts the installer with: deno.json's
// install set as `-P=install` grants it, plus the `host:port` of the http(s) release source this invocation
// fetches from (lib/installer/grants.ts). Runs under the small `install-grants` set: it reads attempt records and
// the saved source, nothing else.
import { fileURLToPath } from "node:url";
import { DEFAULT_INSTALL_PATHS, installReach, withReach } from "../../lib/installer/mod.ts";
import { layoutFromEnv, permissionFlags, permissionSet } from "../../lib/permissions/mod.ts";
import { messageOf } from "../../lib/util/mod.ts";

/** The flags for `ployzd install args`, the set's relative paths resolved against `appDir`. */
export async function installFlags(args: string[], appDir: string): Promise<string[]> {
  const paths = { ...DEFAULT_INSTALL_PATHS, layout: layoutFromEnv((k) => Deno.env.get(k)) };
  const flags = permissionFlags(withReach(permissionSet("install", appDir), await installReach(paths, args)));
  for (const flag of flags) {
    if (/[\n\0]/.test(flag)) throw new TypeError(`Cannot pass the permission flag "${JSON.stringify(flag)}"`);
  }
  return flags;
}

if (import.meta.main) {
  try {
    console.log(
      (await installFlags(Deno.args, fileURLToPath(new URL("../../", import.meta.url)))).join("\n"),
    );
  } catch (error) {
    console.error(`error[invalid_argument]: ${messageOf(error)}`);
    Deno.exitCode = 2;
  }
}
