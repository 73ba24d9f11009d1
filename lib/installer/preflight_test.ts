import { deepEqual, throws } from "node:assert/strict";
import { stagedRunArgs } from "./preflight.ts";

Deno.test("the staged launcher runs as a waited, piped, collected transient unit with a bounded runtime", () => {
  const args = stagedRunArgs(
    "ployz-preflight-abc123-0f0f0f0f-version.service",
    "/var/lib/ployz/install/staging/abc123/tree/ployz-0.2.0-x86_64-unknown-linux-gnu",
    ["version", "--json"],
    90_000,
    { DENO_DIR: "/var/lib/ployz/install/staging/abc123/deno-dir", PLOYZ_RUN_DIR: "/run/p" },
  );
  deepEqual(args, [
    "--unit=ployz-preflight-abc123-0f0f0f0f-version.service",
    "--quiet",
    "--wait",
    "--pipe",
    "--collect",
    "--service-type=exec",
    "--property=RuntimeMaxSec=95",
    "--property=TimeoutStopSec=5",
    "--setenv=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "--setenv=LANG=C.UTF-8",
    "--setenv=NO_COLOR=1",
    "--setenv=DENO_DIR=/var/lib/ployz/install/staging/abc123/deno-dir",
    "--setenv=PLOYZ_RUN_DIR=/run/p",
    "--",
    "/var/lib/ployz/install/staging/abc123/tree/ployz-0.2.0-x86_64-unknown-linux-gnu/bin/ployzd",
    "version",
    "--json",
  ]);
});

Deno.test("the staged run refuses a foreign unit name, a relative or spaced tree, and a multi-line value", () => {
  const ok = "ployz-preflight-abc123-0f0f0f0f-probe.service";
  throws(() => stagedRunArgs("sshd.service", "/t", [], 1000, {}), /Invalid unit/);
  throws(() => stagedRunArgs("ployz-serve.service", "/t", [], 1000, {}), /Invalid unit/);
  throws(() => stagedRunArgs(ok, "t/tree", [], 1000, {}), /Invalid staged tree/);
  throws(() => stagedRunArgs(ok, "/t/a b", [], 1000, {}), /Invalid staged tree/);
  throws(() => stagedRunArgs(ok, "/t", [], 1000, { X: "a\nb" }), /Invalid environment entry "X"/);
  throws(() => stagedRunArgs(ok, "/t", [], 1000, { "A=B": "c" }), /Invalid environment entry/);
});
