// Compiles ployzd and ployz for each target with their permission sets baked in, where denort exists.
import { join } from "node:path";
import { permissionFlags, permissionSet, permissionSetNames, unionOf } from "../../lib/permissions/mod.ts";
import { denoDir, findDenort, type Target } from "./targets.ts";

/** What happened for one target. */
export interface CompileResult {
  triple: string;
  binaries: string[];
  /** Why nothing was compiled, in one plain sentence; absent when binaries were made. */
  skipped?: string;
}

/**
 * The flags each compiled program is granted. A compiled ployzd holds the union of its subcommands' sets and
 * narrows each subcommand into a Worker; a compiled ployz holds the CLI set plus the lab's.
 */
export function compiledGrants(): { ployzd: string[]; ployz: string[] } {
  const daemonSets = ["serve", "dns", "observe", "install", "dial-stdio", "none"].map((n) =>
    permissionSet(n)
  );
  const cliSets = permissionSetNames().filter((n) => n === "cli" || n === "lab").map((n) => permissionSet(n));
  // The network wholesale: the install Worker is narrowed to its release source's host, known only at run time.
  const anySource = { net: true };
  return {
    ployzd: [...permissionFlags(unionOf([...daemonSets, anySource])), "--unstable-worker-options"],
    ployz: permissionFlags(unionOf(cliSets)),
  };
}

/** Compiles both programs for `target` into `outDir/<triple>/`, or reports plainly why it cannot. */
export async function compileTarget(root: string, target: Target, outDir: string): Promise<CompileResult> {
  const deno = Deno.execPath();
  const denort = findDenort(target.triple, Deno.version.deno, denoDir(), deno);
  if (!denort.found) {
    return {
      triple: target.triple,
      binaries: [],
      skipped: `no compiled binary for ${target.triple}: deno compile needs the denort runtime, looked for ${
        denort.looked.map((p) => `"${p}"`).join(", ")
      }; denort is published only on dl.deno.land, which this machine cannot reach`,
    };
  }
  const grants = compiledGrants();
  const dir = join(outDir, target.triple);
  await Deno.mkdir(dir, { recursive: true });
  const binaries: string[] = [];
  const jobs: [string, string[], string[]][] = [
    ["ployzd", grants.ployzd, [
      "--include",
      join(root, "cmd", "ployzd_worker.ts"),
      join(root, "cmd", "ployzd.ts"),
    ]],
    ["ployz", grants.ployz, [join(root, "cmd", "ployz.ts")]],
  ];
  for (const [name, flags, entry] of jobs) {
    const output = join(dir, name);
    const env: Record<string, string> = denort.found.endsWith(".zip") ? {} : { DENORT_BIN: denort.found };
    const result = await new Deno.Command(deno, {
      args: [
        "compile",
        "--quiet",
        "--no-prompt",
        "--frozen",
        "--cached-only",
        "--config",
        join(root, "deno.json"),
        "--target",
        target.triple,
        "-o",
        output,
        ...flags,
        ...entry,
      ],
      env,
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    if (!result.success) {
      throw new Error(`Cannot compile ${name} for ${target.triple}: deno compile exited ${result.code}`);
    }
    binaries.push(output);
  }
  return { triple: target.triple, binaries };
}

if (import.meta.main) {
  const root = join(import.meta.dirname!, "..", "..");
  const { LINUX_TARGETS } = await import("./targets.ts");
  let made = 0;
  for (const target of LINUX_TARGETS) {
    const result = await compileTarget(root, target, join(root, "dist", "bin"));
    if (result.skipped) console.error(`compile: ${result.skipped}`);
    else console.log(`compile: ${result.binaries.join(", ")}`);
    made += result.binaries.length;
  }
  Deno.exitCode = made > 0 ? 0 : 1;
}
