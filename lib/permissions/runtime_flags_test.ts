import { deepEqual, equal, match } from "node:assert/strict";
import { join } from "node:path";
import { jemallocLibrary, runtimeEnvironment } from "./runtime_flags.ts";

Deno.test("serve alone runs with jemalloc preloaded, and only where the host has the library", () => {
  const serve = runtimeEnvironment("serve", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2");
  equal(serve.LD_PRELOAD, "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2");
  // The glibc settings stay: they are what serve runs with where the library is absent.
  equal(serve.MALLOC_ARENA_MAX, "2");
  equal(runtimeEnvironment("serve", null).LD_PRELOAD, undefined);
  deepEqual(runtimeEnvironment("dns", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"), {});
  deepEqual(runtimeEnvironment("observe", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"), {});
});

Deno.test("jemallocLibrary() picks the first candidate that is a file", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const present = join(dir, "libjemalloc.so.2");
    Deno.writeTextFileSync(present, "");
    Deno.mkdirSync(join(dir, "a-directory"));
    equal(jemallocLibrary([join(dir, "absent.so.2"), join(dir, "a-directory"), present]), present);
    equal(jemallocLibrary([join(dir, "absent.so.2")]), undefined);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("dropPreload() lets serve's permission set start processes although serve starts with LD_PRELOAD", async () => {
  const library = jemallocLibrary();
  if (library === undefined && Deno.env.get("CI") === "true") {
    throw new Error("libjemalloc2 is missing on this host: .ci/setup installs it");
  }
  const dir = await Deno.makeTempDir();
  try {
    const run = async (drop: boolean): Promise<string> => {
      const script = join(dir, `drop_${drop}.ts`);
      await Deno.writeTextFile(
        script,
        (drop
          ? `(await import(${
            JSON.stringify(new URL("./runtime_flags.ts", import.meta.url).href)
          })).dropPreload();\n`
          : "") +
          `try { await new Deno.Command("true").output(); console.log("started"); } catch (e) { console.log(String(e)); }\n`,
      );
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--no-config",
          `--allow-read=${dir},${new URL(".", import.meta.url).pathname}`,
          "--allow-env=PLOYZ_*,LD_PRELOAD",
          "--ignore-env",
          "--allow-run=true",
          script,
        ],
        env: { LD_PRELOAD: library ?? "" },
        stdout: "piped",
      }).output();
      return new TextDecoder().decode(out.stdout).trim();
    };
    match(await run(false), /LD_PRELOAD/);
    equal(await run(true), "started");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
