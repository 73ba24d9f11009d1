// Prints, one per line, the deno permission flags of a deno.json set relocated to the layout the PLOYZ_* variables
// name (PLOYZ_DATA_DIR, PLOYZ_RUN_DIR, PLOYZ_DOCKER_SOCKET, PLOYZ_DOCKER_ROOT). bin/ployzd passes `-P=<set>`,
// which grants only the default paths, so a daemon under another layout is started with these flags instead (any
// further arguments are programs the set may also run):
//   mapfile -t flags < <(deno run --allow-env=PLOYZ_* tools/relocated_flags.ts serve "$(command -v deno)")
//   deno run "${flags[@]}" cmd/ployzd.ts serve
import { layoutFromEnv, permissionFlags, permissionSet, relocate } from "../lib/permissions/mod.ts";
import { messageOf } from "../lib/util/mod.ts";

const [name, ...runs] = Deno.args;
if (name === undefined) {
  console.error("usage: relocated_flags.ts SET [PROGRAM...]");
  Deno.exit(2);
}
let set;
try {
  set = permissionSet(name);
} catch (error) {
  console.error(`error[invalid_argument]: ${messageOf(error)}`);
  Deno.exit(2);
}
const layout = layoutFromEnv((key) => Deno.env.get(key));
const relocated = relocate(set, layout);
// Extra programs the set may run: a daemon without systemd spawns `ployzd dns` with its own deno.
if (runs.length > 0 && relocated.run !== true) {
  relocated.run = [...(Array.isArray(relocated.run) ? relocated.run : []), ...runs];
}
console.log(permissionFlags(relocated).join("\n"));
