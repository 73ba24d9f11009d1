import { equal, match, ok, throws } from "node:assert/strict";
import { join } from "node:path";
import { jemallocLibrary } from "../permissions/mod.ts";
import { renderUnit, type UnitSubcommand } from "./units.ts";
import { environmentLine, quoteExecWord, quotePath, UnitValueError } from "./systemd_escape.ts";

const ROOT = join(import.meta.dirname!, "..", "..");

function units(): { subcommand: UnitSubcommand; text: string; name: string }[] {
  return (["serve", "dns", "observe"] as const).map((subcommand) => ({
    subcommand,
    ...renderUnit(subcommand, { deno: Deno.execPath(), appDir: ROOT }),
  }));
}

Deno.test("renderUnit() puts exactly the subcommand's permission set into ExecStart", () => {
  const dns = units().find((u) => u.subcommand === "dns")!;
  // The code each process imports lazily is read from the unit's own release tree.
  ok(
    dns.text.includes(`--allow-read=/run/ployz/dns.json,/etc/resolv.conf,${ROOT}/cmd,${ROOT}/lib `),
    dns.text,
  );
  const elsewhere = renderUnit("dns", { deno: "/usr/lib/ployz/deno", appDir: "/usr/lib/ployz" }).text;
  ok(elsewhere.includes(",/usr/lib/ployz/cmd,/usr/lib/ployz/lib "), elsewhere);
  match(
    dns.text,
    /--allow-net=0\.0\.0\.0\/0:53,0\.0\.0\.0:0,10\.0\.0\.0\/8,172\.16\.0\.0\/12,192\.168\.0\.0\/16 /,
  );
  ok(!dns.text.includes("docker.sock"), "the dns unit must not reach docker.sock");
  ok(!/MemoryDenyWriteExecute/.test(units().map((u) => u.text).join("\n")));
});

Deno.test("renderUnit() runs each subcommand with its measured V8 flags", () => {
  for (const unit of units()) {
    const v8 = unit.text.match(/ --v8-flags=(\S+) /)?.[1];
    const expected = {
      dns: "--lite-mode,--max-semi-space-size=1",
      serve: "--max-semi-space-size=1",
      observe: undefined,
    };
    equal(v8, expected[unit.subcommand], unit.subcommand);
  }
});

Deno.test("renderUnit() runs dns without deno.json, naming its unstable features, and the others under it", () => {
  for (const unit of units()) {
    const exec = unit.text.match(/^ExecStart=(.*)$/m)![1];
    if (unit.subcommand === "dns") {
      ok(!exec.includes("deno.json"), exec);
      for (const flag of ["--no-config", "--no-lock", "--unstable-net", "--unstable-lazy-dynamic-imports"]) {
        ok(exec.includes(` ${flag} `), `${flag}: ${exec}`);
      }
      // The probe runs the same way, so what it proves is what starts.
      match(unit.text, /^ExecStartPre=.* --no-config .* dns --probe$/m);
    } else {
      ok(exec.includes(` --frozen --config ${join(ROOT, "deno.json")} `), exec);
    }
  }
});

Deno.test("renderUnit() passes a relocated layout as PLOYZ_* variables and relocated grants", () => {
  const unit = renderUnit("observe", {
    deno: "/usr/lib/ployz/deno",
    appDir: "/usr/lib/ployz",
    layout: {
      dataDir: "/srv/m1/data",
      runDir: "/srv/m1/run",
      dockerSocket: "/srv/m1/d.sock",
      dockerRoot: "/srv/d",
    },
  });
  match(unit.text, /Environment="PLOYZ_DATA_DIR=\/srv\/m1\/data"/);
  match(
    unit.text,
    /--allow-read=\/srv\/m1\/data\/observe,\/srv\/m1\/run\/observe\.sock,\/srv\/d\/containers,/,
  );
  match(unit.text, /ReadWritePaths=\/srv\/m1\/data\/observe \/srv\/m1\/run/);
});

Deno.test("only the serve unit tells its daemon that systemd keeps the DNS and Observe Store runtime units", () => {
  const [serve, dns, observe] = units();
  match(serve.text, /^Environment="PLOYZ_RUNTIME_UNITS=systemd"$/m);
  // Measured in tools/bench/daemon_footprint_bench.ts: fewer malloc arenas, lower idle RSS.
  match(serve.text, /^Environment="MALLOC_ARENA_MAX=2"$/m);
  // Measured in tools/bench/lab_footprint_bench.ts: large transient buffers go back to the system once freed.
  match(serve.text, /^Environment="MALLOC_MMAP_THRESHOLD_=131072"$/m);
  match(serve.text, /^Environment="MALLOC_TRIM_THRESHOLD_=131072"$/m);
  ok(!dns.text.includes("MALLOC_"), dns.text);
  // Measured in tools/bench/lab_footprint_bench.ts: jemalloc gives back what a Deploy freed.
  const jemalloc = jemallocLibrary();
  if (jemalloc === undefined && Deno.env.get("CI") === "true") {
    throw new Error("libjemalloc2 is missing on this host: .ci/setup installs it");
  }
  if (jemalloc !== undefined) match(serve.text, new RegExp(`^Environment="LD_PRELOAD=${jemalloc}"$`, "m"));
  for (const unit of [dns, observe]) ok(!unit.text.includes("LD_PRELOAD"), unit.text);
  ok(!dns.text.includes("PLOYZ_RUNTIME_UNITS"), dns.text);
  ok(!observe.text.includes("PLOYZ_RUNTIME_UNITS"), observe.text);
});

Deno.test("unit values are escaped or refused", () => {
  equal(quoteExecWord("ExecStart", "/opt/my app/deno"), '"/opt/my app/deno"');
  equal(quoteExecWord("ExecStart", "100%"), "100%%");
  equal(quoteExecWord("ExecStart", "$HOME"), "$$HOME");
  equal(quoteExecWord("ExecStart", 'say "hi"'), '"say \\"hi\\""');
  equal(environmentLine("A", 'x "y" 5%'), 'Environment="A=x \\"y\\" 5%%"');
  equal(quotePath("ReadWritePaths", "-/run/docker.sock"), "-/run/docker.sock");
  throws(() => quoteExecWord("ExecStart", "a\nExecStartPre=/bin/evil"), UnitValueError);
  throws(() => environmentLine("A", "x\ny"), /newline or control character/);
  throws(() => environmentLine("A B", "x"), /variable name/);
  throws(() => quotePath("ReadWritePaths", "relative/dir"), /absolute path/);
  throws(() => quotePath("ReadWritePaths", "/var/../etc"), /absolute path/);
  throws(
    () =>
      renderUnit("serve", { deno: "/usr/bin/deno", appDir: "/x", layout: { ...lay(), dataDir: "/a\nb" } }),
    UnitValueError,
  );
});

function lay(): { dataDir: string; runDir: string; dockerSocket: string; dockerRoot: string } {
  return {
    dataDir: "/var/lib/ployz",
    runDir: "/run/ployz",
    dockerSocket: "/run/docker.sock",
    dockerRoot: "/d",
  };
}

Deno.test("renderUnit() starts serve and observe from the release tree's bundle while it is fresh, dns from source", async () => {
  const tree = await Deno.makeTempDir({ prefix: "ployz-unit-tree-" });
  try {
    for (const dir of ["cmd", "lib", "dist/ployzd"]) await Deno.mkdir(join(tree, dir), { recursive: true });
    for (const file of ["deno.json", "deno.lock", "cmd/ployzd.ts", "dist/ployzd/ployzd.js"]) {
      await Deno.writeTextFile(join(tree, file), "\n");
    }
    const past = new Date(Date.now() - 60_000);
    for (const path of ["deno.json", "deno.lock", "cmd", "cmd/ployzd.ts", "lib"]) {
      await Deno.utime(join(tree, path), past, past);
    }
    const execStart = (subcommand: UnitSubcommand): string[] =>
      renderUnit(subcommand, { deno: "/usr/lib/ployz/deno", appDir: tree }).text.match(
        /^ExecStart=(.*)$/m,
      )![1]
        .split(" ");
    equal(execStart("serve").at(-2), join(tree, "dist", "ployzd", "ployzd.js"));
    equal(execStart("dns").at(-2), join(tree, "cmd", "ployzd.ts"));
    equal(execStart("observe").at(-2), join(tree, "dist", "ployzd", "ployzd.js"));
    // The bundle's chunks are imported when the subcommand runs: its read grant covers them.
    for (const subcommand of ["serve", "observe"] as const) {
      ok(
        execStart(subcommand).some((w) => w.startsWith("--allow-read=") && w.includes(`${tree}/dist/ployzd`)),
      );
    }
    await Deno.utime(join(tree, "cmd", "ployzd.ts"), new Date(), new Date(Date.now() + 1_000));
    equal(execStart("serve").at(-2), join(tree, "cmd", "ployzd.ts"), "an edited tree runs its source");
  } finally {
    await Deno.remove(tree, { recursive: true });
  }
});
