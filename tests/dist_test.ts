// `deno task dist` for this machine's target: a checksummed tree that runs offline, and a plain statement of
// why no compiled binary was made when denort is missing.
import { equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import { ROOT, run } from "./support/spawn.ts";

Deno.test("dist builds a checksummed offline tree and says plainly why nothing was compiled", async () => {
  const out = await Deno.makeTempDir({ prefix: "ployz-dist-" });
  try {
    const result = await run(Deno.execPath(), ["run", "--allow-all", join(ROOT, "tools", "dist.ts")], {
      PLOYZ_DIST_TARGETS: "host",
      PLOYZ_DIST_OUT: out,
      HOME: Deno.env.get("HOME") ?? "/root",
    });
    equal(result.code, 0, result.stderr + result.stdout);
    match(result.stdout, /verified ployz-[\d.]+-x86_64-unknown-linux-gnu\.tar\.gz runs offline/);
    const compiled = await Array.fromAsync(Deno.readDir(join(out, "bin"))).catch(() => []);
    if (compiled.length === 0) {
      match(
        result.stdout,
        /no compiled binary for x86_64-unknown-linux-gnu: deno compile needs the denort runtime, looked for .*"[^"]+denort-x86_64-unknown-linux-gnu\.zip"/,
      );
    }
    const sums = await Deno.readTextFile(join(out, "SHA256SUMS"));
    match(sums, /^[0-9a-f]{64} {2}ployz-[\d.]+-x86_64-unknown-linux-gnu\.tar\.gz$/m);
    const check = await new Deno.Command("sha256sum", {
      args: ["-c", "SHA256SUMS"],
      cwd: out,
      stdout: "piped",
    }).output();
    ok(check.success, new TextDecoder().decode(check.stdout));
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});
