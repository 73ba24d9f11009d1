import { equal } from "node:assert/strict";
import { join } from "node:path";
import { DAEMON_BUNDLE, daemonEntry } from "./entry.ts";

// A tree with sources and a daemon bundle, the sources older than the bundle.
async function tree(): Promise<{ root: string; past: Date }> {
  const root = await Deno.makeTempDir({ prefix: "ployz-entry-" });
  for (const dir of ["cmd", "lib/util", "dist/ployzd"]) {
    await Deno.mkdir(join(root, dir), { recursive: true });
  }
  for (const file of ["deno.json", "deno.lock", "cmd/ployzd.ts", "lib/util/mod.ts", DAEMON_BUNDLE]) {
    await Deno.writeTextFile(join(root, file), "\n");
  }
  const past = new Date(Date.now() - 60_000);
  for (
    const path of ["deno.json", "deno.lock", "cmd", "cmd/ployzd.ts", "lib", "lib/util", "lib/util/mod.ts"]
  ) {
    await Deno.utime(join(root, path), past, past);
  }
  return { root, past };
}

Deno.test("daemonEntry() runs serve and observe from a fresh bundle, and from source after any edit, addition or removal", async () => {
  const { root, past } = await tree();
  const source = join(root, "cmd", "ployzd.ts");
  const bundle = join(root, DAEMON_BUNDLE);
  try {
    equal(daemonEntry("serve", root), bundle);
    equal(daemonEntry("observe", root), bundle);
    // Only serve and observe are bundled: dns and the short-lived helpers run their source.
    for (const sub of ["dns", "install", "systemd"] as const) {
      equal(daemonEntry(sub, root), source, sub);
    }
    await Deno.utime(join(root, "lib/util/mod.ts"), new Date(), new Date(Date.now() + 1_000));
    equal(daemonEntry("serve", root), source, "an edit after the bundle");
    await Deno.utime(join(root, "lib/util/mod.ts"), past, past);
    equal(daemonEntry("serve", root), bundle);
    await Deno.writeTextFile(join(root, "lib", "added.ts"), "\n");
    await Deno.remove(join(root, "lib", "added.ts"));
    equal(daemonEntry("serve", root), source, "a file added and removed changes its directory");
    await Deno.utime(join(root, "lib"), past, past);
    await Deno.utime(join(root, "deno.lock"), new Date(), new Date(Date.now() + 1_000));
    equal(daemonEntry("serve", root), source, "a changed lock file");
    await Deno.utime(join(root, "deno.lock"), past, past);
    equal(daemonEntry("serve", root), bundle);
    await Deno.remove(bundle);
    equal(daemonEntry("serve", root), source, "no bundle");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("daemonEntry() defaults to the tree its own code runs from", () => {
  const root = join(import.meta.dirname!, "..", "..");
  const entry = daemonEntry("dns");
  equal(entry, join(root, "cmd", "ployzd.ts"));
});
