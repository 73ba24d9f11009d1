import { deepEqual, equal } from "node:assert/strict";
import { join } from "node:path";
import { DEFAULT_LAYOUT, permissionSet } from "../permissions/mod.ts";
import { installReach, sourceNetScope, withReach } from "./grants.ts";
import type { InstallPaths } from "./paths.ts";
import { PREREQUISITES } from "./prerequisites.ts";
import { tempDir } from "../util/testing/mod.ts";

Deno.test("an http(s) source grants its host and port only; a directory or anything else grants no network", () => {
  equal(sourceNetScope("https://ployz.sh"), "ployz.sh:443");
  equal(sourceNetScope("https://user:secret@releases.example.com/a/b"), "releases.example.com:443");
  equal(sourceNetScope("http://127.0.0.1:8787/"), "127.0.0.1:8787");
  equal(sourceNetScope("http://[::1]:8080"), "[::1]:8080");
  equal(sourceNetScope("http://example.com"), "example.com:80");
  equal(sourceNetScope("/srv/releases"), undefined);
  equal(sourceNetScope("ftp://example.com"), undefined);
  equal(sourceNetScope("https://"), undefined);
});

Deno.test("withReach adds an http(s) source's host to the set's net scopes and nothing else", () => {
  const set = { net: ["unix:/run/ployz/ployz.sock"], read: ["/usr/lib/ployz"], run: ["tar"] };
  deepEqual(withReach(set, { source: "https://r.example:8443/x" }), {
    ...set,
    net: ["unix:/run/ployz/ployz.sock", "r.example:8443"],
  });
  deepEqual(withReach(set, {}), set);
  deepEqual(withReach({}, { source: "http://h" }), { net: ["h:80"] });
});

Deno.test("installReach finds the source in the arguments, the saved source or the attempt's record", async () => {
  await using rootDir = await tempDir("ployz-grants-");
  const root = rootDir.path;
  const paths: InstallPaths = {
    prefix: join(root, "prefix"),
    binDir: join(root, "bin"),
    unitDir: join(root, "units"),
    layout: { ...DEFAULT_LAYOUT, dataDir: join(root, "data") },
  };
  await Deno.mkdir(join(root, "data", "install", "attempts"), { recursive: true });
  deepEqual(await installReach(paths, ["--from", "/t/a.tar.gz", "--source", "http://h:1"]), {
    tarball: "/t/a.tar.gz",
    source: "http://h:1",
  });
  deepEqual(await installReach(paths, ["--upgrade"]), { source: undefined });
  await Deno.writeTextFile(
    join(root, "data", "install", "source.json"),
    '{"source":"https://saved.example"}',
  );
  deepEqual(await installReach(paths, ["--upgrade", "--wait"]), { source: "https://saved.example" });
  deepEqual(await installReach(paths, ["--upgrade", "--source", "/dir"]), { source: "/dir" });
  await Deno.writeTextFile(
    join(root, "data", "install", "attempts", "abcdef12.json"),
    '{"id":"abcdef12","source":"http://rec.example:8080"}',
  );
  deepEqual(await installReach(paths, ["--attempt", "abcdef12"]), { source: "http://rec.example:8080" });
  // An id that could walk out of the attempts directory, a record that is not there, a status read, or
  // arguments the command refuses reach nothing.
  deepEqual(await installReach(paths, ["--attempt", "../source"]), {});
  deepEqual(await installReach(paths, ["--attempt", "zzzzzz99"]), { source: undefined });
  deepEqual(await installReach(paths, ["--status", "abcdef12"]), {});
  deepEqual(await installReach(paths, ["--bogus", "--source", "http://h"]), {});
});

Deno.test("withReach adds a directory source and the artifact to read, never a relative or walking source", () => {
  const set = {
    read: { allow: ["/usr/lib/ployz"], deny: ["/etc/shadow"] },
    net: ["unix:/run/ployz/ployz.sock"],
  };
  deepEqual(withReach(set, { source: "/srv/rel", tarball: "/tmp/t/a.tar.gz" }), {
    ...set,
    read: { allow: ["/usr/lib/ployz", "/tmp/t/a.tar.gz", "/srv/rel"], deny: ["/etc/shadow"] },
  });
  deepEqual(withReach(set, { source: "https://h/x", tarball: "a.tar.gz" }), {
    read: { allow: ["/usr/lib/ployz", "a.tar.gz"], deny: ["/etc/shadow"] },
    net: ["unix:/run/ployz/ployz.sock", "h:443"],
  });
  deepEqual(withReach(set, { source: "srv/rel" }), set);
  deepEqual(withReach(set, { source: "/srv/../etc" }), set);
});

Deno.test("the install set reads every file that shows a prerequisite is present", () => {
  // An unreadable evidence file would read as a missing package, and first setup would install it.
  const read = permissionSet("install").read as { allow: string[] };
  for (const p of PREREQUISITES) {
    for (const path of p.evidence) equal(read.allow.includes(path), true, `${p.name}: ${path}`);
  }
});
