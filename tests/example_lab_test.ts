// The README's first command: a three-Machine lab with the hello example deployed through m1, one replica per
// Machine, answering on each.
import { equal, match } from "node:assert/strict";
import { join } from "node:path";
import { ROOT, run } from "./support/spawn.ts";
import { needs } from "./support/needs.ts";

Deno.test(needs(["lab"], {
  name: "examples/hello/lab.sh brings up 3 Machines, deploys hello through m1 onto each, and each answers",
  async fn() {
    const env = {
      PLOYZ_DOCKER_SOCKET: Deno.env.get("PLOYZ_DOCKER_SOCKET") ?? "",
      HOME: Deno.env.get("HOME") ?? "/root",
    };
    try {
      const up = await run(join(ROOT, "examples", "hello", "lab.sh"), [], env);
      equal(up.code, 0, up.stderr + up.stdout);
      match(up.stdout, /<h1>ployz test<\/h1>/);
      match(up.stdout, /hello answers on every Machine of a 3-Machine lab \(m1 m2 m3\), one replica each/);
      const ps = await run(join(ROOT, "bin", "ployz"), [
        "lab",
        "exec",
        "m2",
        "--",
        "ployz",
        "ps",
        "--all-machines",
      ], env);
      equal(ps.code, 0, ps.stderr);
      for (const slot of [1, 2, 3]) {
        match(
          ps.stdout,
          new RegExp(
            `hello\\s+web\\s+${slot}\\s+hello-web-${slot}-\\S+\\s+ployz-test/busybox:1\\s+running\\s+healthy.*\\bm${slot}\\b`,
          ),
        );
      }
    } finally {
      const down = await run(join(ROOT, "bin", "ployz"), ["lab", "down"], env);
      equal(down.code, 0, down.stderr);
    }
  },
}));
