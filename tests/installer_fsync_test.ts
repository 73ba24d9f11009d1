// Activation under strace: every file and directory of a release is fsynced before `current` is renamed to
// point at it, so a power loss right after the switch cannot leave `current` on empty or torn files.
import { deepEqual, ok } from "node:assert/strict";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { ROOT } from "./support/spawn.ts";

Deno.test("a release's files are fsynced before current switches to it", async () => {
  const root = await Deno.makeTempDir({ prefix: "ployz-fsync-" });
  try {
    const tree = join(root, "staged");
    const files = ["deno.json", "bin/ployzd", "cmd/ployzd.ts", "node_modules/a/b/index.js"];
    for (const file of files) {
      await Deno.mkdir(join(tree, file, ".."), { recursive: true });
      await Deno.writeTextFile(join(tree, file), `${file}\n`.repeat(1000));
    }
    const driver = join(root, "driver.ts");
    const activate = pathToFileURL(join(ROOT, "lib", "installer", "activate.ts")).href;
    await Deno.writeTextFile(
      driver,
      `import { placeRelease, switchCurrent } from "${activate}";\n` +
        `const paths = { prefix: "${root}/prefix", binDir: "${root}/bin", unitDir: "${root}/units", layout: {} };\n` +
        `await placeRelease(paths as never, "${tree}", "0.9.0", "attemptx");\n` +
        `await switchCurrent(paths as never, "0.9.0");\n`,
    );
    const trace = join(root, "trace.log");
    const out = await new Deno.Command("strace", {
      args: [
        "-f",
        "-y",
        "-qq",
        "-e",
        "trace=fsync,fdatasync,rename,renameat,renameat2",
        "-o",
        trace,
        Deno.execPath(),
        "run",
        "--allow-all",
        "--config",
        join(ROOT, "deno.json"),
        driver,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    ok(out.success, `strace or the driver failed: ${new TextDecoder().decode(out.stderr)}`);
    const lines = joinResumed((await Deno.readTextFile(trace)).split("\n"));
    const switched = lines.findIndex((l) => /rename.*\/prefix\/current"/.test(l));
    ok(switched > 0, "current was renamed into place");
    const incoming = join(root, "prefix", "releases", ".incoming-attemptx");
    const synced = new Set<string>();
    for (const line of lines.slice(0, switched)) {
      const path = /(?:fsync|fdatasync)\(\d+<([^>]+)>\)\s+=\s+0/.exec(line)?.[1];
      if (path?.startsWith(incoming)) synced.add(relative(incoming, path) || ".");
    }
    const expected = [...files, ".", "bin", "cmd", "node_modules", "node_modules/a", "node_modules/a/b"];
    deepEqual(expected.filter((p) => !synced.has(p)), [], "synced before the switch: everything");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

/**
 * strace's lines with each call that another thread's call interrupted put back on one line: with fsyncs on several
 * threads at once, strace -f writes `PID fsync(…) <unfinished ...>` and later `PID <... fsync resumed>) = 0`.
 */
function joinResumed(lines: string[]): string[] {
  const open = new Map<string, string>();
  const out: string[] = [];
  for (const line of lines) {
    const unfinished = /^(\d+)\s+(.*) <unfinished \.\.\.>$/.exec(line);
    if (unfinished !== null) {
      open.set(unfinished[1], `${unfinished[1]} ${unfinished[2]}`);
      continue;
    }
    const resumed = /^(\d+)\s+<\.\.\. \w+ resumed>(.*)$/.exec(line);
    if (resumed !== null && open.has(resumed[1])) {
      out.push(`${open.get(resumed[1])}${resumed[2]}`);
      open.delete(resumed[1]);
      continue;
    }
    out.push(line);
  }
  return out;
}
