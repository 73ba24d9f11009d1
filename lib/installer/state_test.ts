// Attempt records, the install lock, activation and pruning, on temp directories.
import { deepEqual, equal, ok, rejects, throws } from "node:assert/strict";
import { join } from "node:path";
import { DEFAULT_LAYOUT } from "../permissions/mod.ts";
import { linkBinaries, placeRelease, pruneReleases, switchCurrent, writeUnits } from "./activate.ts";
import {
  type AttemptRecord,
  checkAttemptId,
  findByRequestKey,
  loadAttempt,
  newAttemptId,
  pruneAttempts,
  writeAttempt,
} from "./attempt.ts";
import { InstallError } from "./errors.ts";
import { lockHolder, lockIsHeld, tryLockInstall } from "./lock.ts";
import type { InstallPaths } from "./paths.ts";
import { classifyProbe } from "./preflight.ts";
import { prerequisitesToInstall } from "./prerequisites.ts";
import { readFound } from "./takeover.ts";

async function tempPaths(): Promise<InstallPaths & AsyncDisposable> {
  const root = await Deno.makeTempDir({ prefix: "ployz-install-" });
  return {
    prefix: join(root, "usr/lib/ployz"),
    binDir: join(root, "usr/local/bin"),
    unitDir: join(root, "etc/systemd/system"),
    layout: { ...DEFAULT_LAYOUT, dataDir: join(root, "var/lib/ployz"), runDir: join(root, "run/ployz") },
    async [Symbol.asyncDispose]() {
      await Deno.remove(root, { recursive: true });
    },
  };
}

function record(id: string, key: string, extra: Partial<AttemptRecord> = {}): AttemptRecord {
  const now = new Date().toISOString();
  return {
    id,
    "request_key": key,
    "target_version": "0.2.0",
    source: "/r",
    stage: "accepted",
    "started_at": now,
    "updated_at": now,
    "journal_hint": "journalctl -u ployz-upgrade-" + id,
    worker: "unit",
    ...extra,
  };
}

Deno.test("attempt records round-trip, are found by request key, keep unknown fields and are pruned", async () => {
  await using paths = await tempPaths();
  const a = newAttemptId(1_000);
  const b = newAttemptId(2_000);
  ok(a < b, "ids sort by start time");
  await writeAttempt(paths, record(a, "k1", { outcome: "succeeded", "future_field": 7 }));
  await writeAttempt(paths, record(b, "k2"));
  equal((await findByRequestKey(paths, "k2"))?.id, b);
  equal((await loadAttempt(paths, a)).future_field, 7);
  await pruneAttempts(paths, 0);
  await rejects(() => loadAttempt(paths, a), (e: InstallError) => e.code === "not_found");
  equal((await loadAttempt(paths, b)).id, b, "an unfinished attempt is never pruned");
  throws(() => checkAttemptId("../../etc/passwd"), /Invalid attempt id/);
});

Deno.test("the install lock refuses a second holder busy, naming the first attempt", async () => {
  await using paths = await tempPaths();
  const first = await tryLockInstall(paths, "attempt1");
  try {
    ok(await lockIsHeld(paths));
    equal(await lockHolder(paths), "attempt1");
    await rejects(
      () => tryLockInstall(paths, "attempt2"),
      (e: InstallError) => e.code === "busy" && /attempt "attempt1" holds the install lock/.test(e.message),
    );
  } finally {
    await first.release();
  }
  ok(!(await lockIsHeld(paths)));
  await (await tryLockInstall(paths, "attempt2")).release();
});

Deno.test("activation places releases, swaps current, links binaries, records what it found, prunes", async () => {
  await using paths = await tempPaths();
  await Deno.mkdir(paths.binDir, { recursive: true });
  await Deno.writeTextFile(join(paths.binDir, "ployzd"), "#!/bin/sh\necho foreign\n");
  for (const version of ["0.1.0", "0.2.0", "0.3.0", "0.4.0"]) {
    const tree = join(paths.layout.dataDir, "staged", version);
    await Deno.mkdir(join(tree, "bin"), { recursive: true });
    await Deno.writeTextFile(join(tree, "deno.json"), JSON.stringify({ version }));
    await placeRelease(paths, tree, version, `a${version.replaceAll(".", "")}xxxx`);
    await switchCurrent(paths, version);
    await linkBinaries(paths);
  }
  equal(await Deno.readLink(join(paths.prefix, "current")), "releases/0.4.0");
  equal(JSON.parse(await Deno.readTextFile(join(paths.prefix, "current", "deno.json"))).version, "0.4.0");
  equal(await Deno.readLink(join(paths.binDir, "ployzd")), join(paths.prefix, "current", "bin", "ployzd"));
  const found = await readFound(paths);
  equal(found[join(paths.binDir, "ployzd")].kind, "file");
  equal(await Deno.readTextFile(found[join(paths.binDir, "ployzd")].saved_as!), "#!/bin/sh\necho foreign\n");
  equal(found[join(paths.binDir, "ployz")].kind, "absent");
  deepEqual(
    await pruneReleases(paths, new Set(["0.1.0"])),
    ["0.2.0"],
    "the previous release is kept, then the highest",
  );
  const left = (await Array.fromAsync(Deno.readDir(join(paths.prefix, "releases")))).map((e) => e.name)
    .sort();
  deepEqual(left, ["0.1.0", "0.3.0", "0.4.0"]);
  const units = await writeUnits(paths);
  deepEqual(units, ["ployz-serve.service", "ployz-dns.service", "ployz-observe.service"]);
  deepEqual(await writeUnits(paths), [], "unchanged units are not rewritten");
  const serve = await Deno.readTextFile(join(paths.unitDir, "ployz-serve.service"));
  ok(serve.includes(`${join(paths.prefix, "current", "deno")} run`));
});

Deno.test("preflight reads a missing DNS probe as not built, never as passed", () => {
  equal(classifyProbe(0, false, ""), "passed");
  equal(
    classifyProbe(1, false, 'error[unsupported]: "ployzd dns" is not built yet in this release'),
    "not_built",
  );
  equal(
    classifyProbe(2, false, 'error[invalid_argument]: Unknown option "--probe" for "ployzd dns"'),
    "not_built",
  );
  equal(classifyProbe(1, false, "cannot load /run/ployz/dns.json"), "failed");
  equal(classifyProbe(0, true, ""), "failed");
});

Deno.test("prerequisites: only when asked, or missing at first setup; never on an ordinary upgrade", () => {
  deepEqual(prerequisitesToInstall("auto", true, ["wireguard-go"]), ["wireguard-go"]);
  deepEqual(prerequisitesToInstall("auto", false, ["wireguard-go"]), []);
  deepEqual(prerequisitesToInstall("skip", true, ["docker.io"]), []);
  deepEqual(prerequisitesToInstall("install", false, []), ["docker.io", "wireguard-go", "wireguard-tools"]);
});
