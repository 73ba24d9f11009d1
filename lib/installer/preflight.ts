// Bounded preflight of a staged release, before anything running is changed: its own `bin/ployzd version
// --json` must report exactly the expected version, and `bin/ployzd dns --probe` must say this binary can serve
// Internal DNS.
import { isAbsolute, join } from "node:path";
import { checkAttemptId } from "./attempt.ts";
import { InstallError } from "./errors.ts";
import { execBounded, type ExecResult, SYSTEM_PATH, tail } from "./exec.ts";

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

/**
 * The `systemd-run` argv that runs the staged release's own launcher as the transient unit `unit`, waiting for it
 * with its output piped back and its exit code passed on. systemd-run (already granted) starts it because Deno
 * cannot grant running a staged file: a run grant names a path that exists when the process starts, and the staged
 * tree does not exist yet ("Can't escalate parent thread permissions" in a Worker, "Requires write access" to it
 * when run directly). RuntimeMaxSec stops the unit even if this process dies before it.
 */
export function stagedRunArgs(
  unit: string,
  tree: string,
  args: string[],
  timeoutMs: number,
  env: Record<string, string>,
): string[] {
  if (!/^ployz-preflight-[a-z0-9-]{1,64}\.service$/.test(unit)) {
    throw new RangeError(`Invalid unit "${unit}"`);
  }
  if (!isAbsolute(tree) || /[\s\\]/.test(tree)) throw new RangeError(`Invalid staged tree "${tree}"`);
  const setenv = Object.entries({ PATH: SYSTEM_PATH, LANG: "C.UTF-8", NO_COLOR: "1", ...env }).map(
    ([k, v]) => {
      if (!/^[A-Z_][A-Z0-9_]*$/.test(k) || /[\n\0]/.test(v)) {
        throw new RangeError(`Invalid environment entry "${k}"`);
      }
      return `--setenv=${k}=${v}`;
    },
  );
  return [
    `--unit=${unit}`,
    "--quiet",
    "--wait",
    "--pipe",
    "--collect",
    "--service-type=exec",
    `--property=RuntimeMaxSec=${Math.ceil(timeoutMs / 1000) + 5}`,
    "--property=TimeoutStopSec=5",
    ...setenv,
    "--",
    join(tree, "bin", "ployzd"),
    ...args,
  ];
}

/** Runs the staged launcher through systemd-run; at the deadline the unit is stopped, not only its client. */
async function runStaged(
  unit: string,
  tree: string,
  args: string[],
  timeoutMs: number,
  env: Record<string, string>,
): Promise<ExecResult> {
  const result = await execBounded(
    "systemd-run",
    stagedRunArgs(unit, tree, args, timeoutMs, { ...env, RUST_BACKTRACE: "0" }),
    { timeoutMs },
  );
  if (result.timedOut) await execBounded("systemctl", ["stop", unit], { timeoutMs: 30_000 }).catch(() => {});
  return result;
}

/** Where the staged release runs its checks. */
export interface PreflightContext {
  /** DENO_DIR for the staged runtime's caches. */
  denoDir: string;
  /** The DNS spec the running Internal DNS serves (`<runDir>/dns.json`). */
  dnsSpec: string;
  /** `PLOYZ_*` layout variables, so the staged release looks where this Machine keeps its files. */
  env: Record<string, string>;
  /** The attempt, which names the transient units: `ployz-preflight-<attempt>-<random>-version|probe`. */
  attemptId: string;
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
  // A random part: a unit left by an earlier run of the same attempt never blocks this one.
  const unit = (step: string): string =>
    `ployz-preflight-${checkAttemptId(context.attemptId)}-${crypto.randomUUID().slice(0, 8)}-${step}.service`;
  const version = await runStaged(unit("version"), tree, ["version", "--json"], timeouts.versionMs, env);
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
  const probe = await runStaged(unit("probe"), tree, ["dns", "--probe"], timeouts.probeMs, env);
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
