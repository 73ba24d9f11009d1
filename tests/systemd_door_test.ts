// The ployz-systemd door, run as the daemon runs it (bin/ployz-systemd, `ployzd systemd` under the systemd set):
// it refuses every request outside its three verbs, every unit that is not Ployz's and every attempt id, version
// or timeout that could reach a command line, before touching systemd, and passes no environment but the layout.
import { equal, match } from "node:assert/strict";
import { join } from "node:path";
import { ROOT } from "./support/spawn.ts";

const DOOR = join(ROOT, "bin", "ployz-systemd");

async function door(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; err: string }> {
  const out = await new Deno.Command(DOOR, {
    args,
    env: { PATH: "/usr/bin:/bin", ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, err: new TextDecoder().decode(out.stderr).trim() };
}

Deno.test("the systemd door refuses anything but its verbs on Ployz units, before reaching systemd", async () => {
  const refusals: [string[], RegExp][] = [
    [
      ["active", "sshd.service"],
      /^error\[invalid_argument\]: Invalid unit "sshd\.service": not a Ployz unit$/,
    ],
    [["active", "ployz-upgrade-../x.service"], /Invalid unit/],
    [["active", "ployz-dns@c.service"], /Invalid unit/],
    [
      ["start", "ployz-dns.service"],
      /Invalid request "start ployz-dns\.service": expected ensure dns\|observe/,
    ],
    [["ensure", "sshd"], /Invalid runtime unit "sshd": expected dns or observe/],
    [["run-worker", "../../etc", "0.1.0"], /Invalid attempt id/i],
    [["run-worker", "abcdef12", "0.1.0;sh"], /Invalid version "0\.1\.0;sh"/],
    [["run-worker", "abcdef12", "0.1.0", "--ready-timeout", "5 --setenv=X"], /Invalid --ready-timeout/],
    [["run-worker", "abcdef12", "0.1.0", "--", "/bin/sh"], /Unexpected argument "\/bin\/sh"/],
  ];
  for (const [args, refusal] of refusals) {
    const started = performance.now();
    const r = await door(args);
    console.log(`${args.join(" ")}: refused in ${(performance.now() - started).toFixed(0)} ms`);
    equal(r.code === 1 || r.code === 2, true, `${args.join(" ")} exited ${r.code}: ${r.err}`);
    match(r.err.split("\n")[0], refusal, args.join(" "));
  }
  const relative = await door(["active", "ployz-dns.service"], { PLOYZ_DATA_DIR: "var/lib/ployz" });
  equal(relative.code, 2);
  match(relative.err, /PLOYZ_DATA_DIR must be an absolute path/);
});
