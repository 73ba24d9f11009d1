// Bounded preflight of a staged release, before anything running is changed: its own `bin/ployzd version
// --json` must report exactly the expected version, and `bin/ployzd dns --probe` must say this binary can serve
// Internal DNS.
import { join } from "node:path";
import { InstallError } from "./errors.ts";
import { execBounded, tail } from "./exec.ts";

/** What preflight observed. */
export interface PreflightResult {
  /**
   * `passed` when `dns --probe` exited 0; `not_built` when the release has no DNS probe at all; `no_spec` when no
   * DNS spec is published on this Machine yet, so there is nothing the probe could be asked to serve.
   */
  dnsProbe: "passed" | "not_built" | "no_spec";
}

/** Step deadlines, in milliseconds. */
export interface PreflightTimeouts {
  /** `version --json`. */
  versionMs: number;
  /** `dns --probe`. */
  probeMs: number;
}

const DEFAULT_TIMEOUTS: PreflightTimeouts = { versionMs: 90_000, probeMs: 60_000 };

/** Runs the staged release's own launcher; `sh` runs it so no staged path needs its own run grant. */
function runStaged(tree: string, args: string[], timeoutMs: number, env: Record<string, string>) {
  return execBounded("sh", [join(tree, "bin", "ployzd"), ...args], {
    timeoutMs,
    env: { ...env, RUST_BACKTRACE: "0" },
  });
}

/** Where the staged release runs its checks. */
export interface PreflightContext {
  /** DENO_DIR for the staged runtime's caches. */
  denoDir: string;
  /** The DNS spec the running Internal DNS serves (`<runDir>/dns.json`). */
  dnsSpec: string;
  /** `PLOYZ_*` layout variables, so the staged release looks where this Machine keeps its files. */
  env: Record<string, string>;
}

/**
 * Refuses the staged tree unless it runs and reports `expected`, and, when this Machine publishes a DNS spec,
 * unless the staged `dns --probe` says it can serve that spec. Returns what the DNS probe said.
 */
export async function preflight(
  tree: string,
  expected: string,
  context: PreflightContext,
  timeouts: PreflightTimeouts = DEFAULT_TIMEOUTS,
): Promise<PreflightResult> {
  const env = { ...context.env, DENO_DIR: context.denoDir };
  const version = await runStaged(tree, ["version", "--json"], timeouts.versionMs, env);
  if (version.timedOut) {
    throw new InstallError(
      "unavailable",
      `Preflight refused the staged release: "bin/ployzd version --json" gave no answer within ${
        timeouts.versionMs / 1000
      } s`,
    );
  }
  let reported: unknown;
  try {
    reported = (JSON.parse(version.stdout) as { version?: unknown }).version;
  } catch {
    reported = undefined;
  }
  if (version.code !== 0 || typeof reported !== "string") {
    throw new InstallError(
      "unavailable",
      `Preflight refused the staged release: "bin/ployzd version --json" failed (exit ${version.code}): ${
        tail(version.stderr || version.stdout)
      }`,
    );
  }
  if (reported !== expected) {
    throw new InstallError(
      "unavailable",
      `Preflight refused the staged release: it reports version "${reported}", expected "${expected}"`,
      { reported, expected },
    );
  }
  if (!(await Deno.stat(context.dnsSpec).then((i) => i.isFile, () => false))) return { dnsProbe: "no_spec" };
  const probe = await runStaged(tree, ["dns", "--probe"], timeouts.probeMs, env);
  const verdict = classifyProbe(probe.code, probe.timedOut, probe.stderr);
  if (verdict === "failed") {
    throw new InstallError(
      "unavailable",
      `Preflight refused the staged release: "bin/ployzd dns --probe" ${
        probe.timedOut ? `gave no answer within ${timeouts.probeMs / 1000} s` : `exited ${probe.code}`
      }: ${tail(probe.stderr || probe.stdout)}`,
    );
  }
  return { dnsProbe: verdict };
}

/**
 * Reads the probe's exit: 0 passes; a release whose `ployzd dns` is not built or does not know `--probe` is
 * reported as `not_built` (it claims nothing about DNS); anything else fails.
 */
export function classifyProbe(
  code: number,
  timedOut: boolean,
  stderr: string,
): "passed" | "not_built" | "failed" {
  if (timedOut) return "failed";
  if (code === 0) return "passed";
  if (/is not built yet/.test(stderr) || /Unknown option "--probe"/.test(stderr)) return "not_built";
  return "failed";
}
