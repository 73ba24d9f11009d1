/**
 * Runs the end-to-end tests (`tests/**\/*_test.ts`) several files at once: a file spends most of its time waiting
 * on dockerd, WireGuard and daemons starting, not on CPU, and every file names its labs, containers, networks and
 * namespaces uniquely. Files start longest first (by {@link COST}) so the last to finish is a short one. Files
 * sharing one fixed name ({@link ONE_LANE}) run one after another beside them; files needing the machine to
 * themselves ({@link ALONE}) run last, one at a time.
 *
 * Before any test it bundles the CLI and the daemon, so `bin/ployz` and `ployzd serve` run what a release tree ships
 * (see `bundleReleaseCode`); then, beside the tests, it builds this host's release tree once for the files that copy
 * one (see `buildSharedDist`).
 *
 * `deno run --allow-read --allow-write --allow-run --allow-env tools/test_e2e.ts [deno test arguments…]`;
 * `DENO_JOBS` sets how many concurrent files run at once (default {@link DEFAULT_JOBS}). Each group prints deno's
 * own `ok | N passed | M failed` line; at the end come the seconds each file's tests took, as {@link COST} lines,
 * each group's wall time, and each failed test with the start of its message.
 *
 * @module
 */

import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

/**
 * Files run at once when `DENO_JOBS` is unset. On 2 cores the labs' waiting bounds the suite more than CPU does (a
 * fresh-clone CI run on a fast host took 11m19s with 4, 12m36s with 3), but on a host half as fast 4 at once
 * starved the labs: health probes, Caddy reloads and upgrade requests outlived their bounds in 3 files of one run.
 */
export const DEFAULT_JOBS = 3;

/**
 * Whole seconds each file's tests took in a CI run (`.ci/run` from a fresh clone, four files at a time on a loaded
 * 2-core host; the run prints these lines at its end); only the order matters. A file not listed here is new and of unknown
 * cost, so it starts first.
 */
export const COST: Readonly<Record<string, number>> = {
  "tests/installer_ssh_test.ts": 999,
  "tests/installer_e2e_test.ts": 914,
  "tests/dist_test.ts": 555,
  "tests/upgrade_rpc_e2e_test.ts": 513,
  "tests/lab_volume_test.ts": 502,
  "tests/operator_ssh_e2e_test.ts": 502,
  "tests/lab_build_test.ts": 459,
  "tests/lab_container_net_test.ts": 450,
  "tests/lab_registry_test.ts": 305,
  "tests/deploy_e2e_test.ts": 266,
  "tests/lab_serving_test.ts": 231,
  "tests/lab_gone_test.ts": 219,
  "tests/lab_https_test.ts": 215,
  "tests/lab_parallel_deploy_test.ts": 204,
  "tests/lab_compose_corpus_test.ts": 193,
  "tests/lab_machines_test.ts": 192,
  "tests/lab_deploy_test.ts": 190,
  "tests/lab_drain_test.ts": 187,
  "tests/lab_removal_test.ts": 178,
  "tests/deploy_faults_e2e_test.ts": 160,
  "tests/lab_proxy_first_test.ts": 160,
  "tests/lab_placement_test.ts": 131,
  "tests/lab_test.ts": 100,
  "tests/permissions_test.ts": 87,
  "tests/lab_routing_test.ts": 85,
  "tests/serving_e2e_test.ts": 84,
  "tests/logs_e2e_test.ts": 81,
  "tests/lab_catch_up_test.ts": 75,
  "tests/store_processes_test.ts": 72,
  "tests/example_lab_test.ts": 63,
  "tests/store_compaction_test.ts": 59,
  "tests/lab_network_test.ts": 54,
  "tests/example_hello_test.ts": 43,
  "tests/lab_metrics_test.ts": 42,
  "tests/lab_trust_test.ts": 42,
  "tests/cli_test.ts": 28,
  "tests/serve_e2e_test.ts": 26,
  "tests/systemd_door_test.ts": 21,
  "tests/observe_e2e_test.ts": 18,
  "tests/dns_respawn_test.ts": 14,
  "tests/dns_restart_test.ts": 14,
  "tests/module_graph_test.ts": 11,
  "tests/wireguard_netns_test.ts": 11,
  "tests/caddy_ingress_test.ts": 10,
  "tests/dns_e2e_test.ts": 10,
  "tests/request_caps_e2e_test.ts": 8,
  "tests/serve_mesh_failure_test.ts": 8,
  "tests/dns_flood_test.ts": 7,
  "tests/volume_btrfs_test.ts": 7,
  "tests/docker_health_test.ts": 5,
  "tests/install_script_test.ts": 5,
  "tests/observe_metrics_e2e_test.ts": 5,
  "tests/shipped_files_docker_test.ts": 5,
  "tests/dns_network_netns_test.ts": 4,
  "tests/build_docker_test.ts": 3,
  "tests/compose_corpus_test.ts": 3,
  "tests/docker_network_test.ts": 3,
  "tests/docker_engine_test.ts": 2,
  "tests/exec_handlers_docker_test.ts": 2,
  "tests/mesh_firewall_netns_test.ts": 2,
  "tests/docker_events_test.ts": 1,
  "tests/docker_registry_test.ts": 1,
  "tests/installer_fsync_test.ts": 1,
  "tests/systemd_units_test.ts": 1,
  "tests/compose_keys_docker_test.ts": 0,
  "tests/docker_grant_test.ts": 0,
  "tests/docker_images_test.ts": 0,
};

/** The test files under `dir` (relative to `root`, `/`-separated), as `deno test dir` would find them. */
export function testFiles(root: string, dir: string): string[] {
  const found: string[] = [];
  const walk = (at: string): void => {
    for (const entry of Deno.readDirSync(at)) {
      const path = join(at, entry.name);
      if (entry.isDirectory) walk(path);
      else if (entry.isFile && /(^|[._])test\.(ts|tsx|mts|js|mjs|jsx)$/.test(entry.name)) {
        found.push(relative(root, path));
      }
    }
  };
  walk(join(root, dir));
  return found.sort();
}

/** `files` in start order: files of unknown cost first, then the costliest; ties by name. */
export function startOrder(files: readonly string[], cost: Readonly<Record<string, number>>): string[] {
  const weight = (f: string): number => cost[f] ?? Number.POSITIVE_INFINITY;
  return [...files].sort((a, b) => weight(b) - weight(a) || (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * Files that run one after another in a lane of their own, beside the concurrent files: each runs a Machine on the
 * shared test dockerd, whose Ingress Proxy container has one fixed name (`ployz-system-caddy-1`).
 */
export const ONE_LANE: Readonly<Record<string, string>> = {
  "tests/caddy_ingress_test.ts": "creates ployz-system-caddy-1 and -2 on the shared dockerd",
  "tests/deploy_e2e_test.ts": "a Deploy on the shared dockerd creates ployz-system-caddy-1",
  "tests/deploy_faults_e2e_test.ts": "a Deploy on the shared dockerd creates ployz-system-caddy-1",
  "tests/example_hello_test.ts": "a Deploy on the shared dockerd creates ployz-system-caddy-1",
  "tests/serving_e2e_test.ts": "a Deploy on the shared dockerd creates ployz-system-caddy-1",
};

/** Files that must have the machine to themselves, run one at a time after the others, each with the reason. */
export const ALONE: Readonly<Record<string, string>> = {
  "tests/observe_metrics_e2e_test.ts": "asserts a busy container gets more than half a core",
  "tests/dns_flood_test.ts": "10k forwarded queries must all be answered within dnsperf's timeout",
  "tests/build_docker_test.ts": "a second build must find the first still holding the Project's build",
  "tests/lab_proxy_first_test.ts":
    "asserts no request through any Ingress Proxy fails, with no retry, through redeploys; beside three other labs, " +
    "4 requests got Caddy's 502 after 3.5 s each, an upstream connect outliving its 3 s dial timeout",
  "tests/lab_drain_test.ts":
    "asserts no request through any Ingress Proxy fails, with no retry, while a Drain moves 6 replicas; it failed " +
    "beside three other labs in the same run, and alone it passes",
  "tests/lab_compose_corpus_test.ts":
    "deploys files as written, whose own healthcheck timeouts (2 s) a docker exec outlasted five times in a row " +
    "while two other labs ran beside it; alone it takes about a minute",
};

/** The three groups of `files`: concurrent (in start order), the one-at-a-time lane, and the files run alone. */
export function groups(
  files: readonly string[],
  cost: Readonly<Record<string, number>>,
  lane: Readonly<Record<string, string>>,
  alone: Readonly<Record<string, string>>,
): { concurrent: string[]; lane: string[]; alone: string[] } {
  return {
    concurrent: startOrder(files.filter((f) => !(f in lane) && !(f in alone)), cost),
    lane: files.filter((f) => f in lane && !(f in alone)),
    alone: files.filter((f) => f in alone),
  };
}

const TEST_FLAGS = ["--allow-all", "--unstable-worker-options", "--sanitize-ops", "--sanitize-resources"];

function denoTest(
  files: string[],
  extra: string[],
  env: Record<string, string>,
  output: "inherit" | "piped",
): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["test", ...TEST_FLAGS, ...extra, ...files],
    cwd: ROOT,
    env,
    stdin: "null",
    stdout: output,
    stderr: output,
  }).spawn();
}

async function writeAll(data: Uint8Array): Promise<void> {
  for (let n = 0; n < data.length;) n += await Deno.stdout.write(data.subarray(n));
}

/**
 * Bundles the CLI and the daemon (`tools/build/bundle.ts`), so that every `bin/ployz` the tests run and every
 * Machine's `ployzd serve` start as a release tree's do: the CLI from one file instead of about 280 modules, a third
 * less CPU per command, and the tests run many (measured on the HTTPS lab file: 16.6 s of CPU from the bundle, 23.2 s
 * from source). A failure is reported and counted; the tests still run, from source.
 */
async function bundleReleaseCode(): Promise<number> {
  const bundled = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", join(ROOT, "tools", "build", "bundle.ts")],
    cwd: ROOT,
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  return bundled.code;
}

/** One `<testcase>` of deno's JUnit report: a test or a step ("<its test> > <step>"), and its failure if any. */
export interface JunitCase {
  /** `tests/x_test.ts`. */
  file: string;
  name: string;
  line: number;
  seconds: number;
  /** The failure's message, as deno wrote it; absent when the case passed. */
  failure?: string;
}

/** The test cases in deno's JUnit report, file by file in report order. */
export function junitCases(junit: string): JunitCase[] {
  const unescape = (text: string): string =>
    text.replace(
      /&(lt|gt|quot|apos|amp);/g,
      (_, e: string) => ({ lt: "<", gt: ">", quot: '"', apos: "'", amp: "&" })[e] ?? "",
    );
  const cases: JunitCase[] = [];
  for (const suite of junit.split(/<testsuite\s/).slice(1)) {
    const file = unescape(/^name="([^"]*)"/.exec(suite)?.[1] ?? "").replace(/^\.\//, "");
    for (const m of suite.matchAll(/<testcase\s+name="([^"]*)"([^>]*)>([\s\S]*?)<\/testcase>/g)) {
      const failure = /<failure message="([^"]*)"/.exec(m[3])?.[1];
      cases.push({
        file,
        name: unescape(m[1]),
        line: Number(/\sline="(\d+)"/.exec(m[2])?.[1] ?? 0),
        seconds: Number(/\stime="([\d.]+)"/.exec(m[2])?.[1] ?? 0),
        ...(failure === undefined ? {} : { failure: unescape(failure) }),
      });
    }
  }
  return cases;
}

/**
 * Seconds each file's tests took, from deno's JUnit report: per file, the sum of its tests' times (a file runs its
 * tests one after another); steps are inside their test's time and not added again. Keys are `tests/x_test.ts`.
 */
export function fileSeconds(junit: string): Record<string, number> {
  const seconds: Record<string, number> = {};
  const byFile = Map.groupBy(junitCases(junit), (c) => c.file);
  for (const [file, cases] of byFile) {
    // A step is named "<its test> > <step>"; a test is a case no other case's name prefixes so.
    const tests = cases.filter((c) => !cases.some((p) => p !== c && c.name.startsWith(`${p.name} > `)));
    seconds[file] = (seconds[file] ?? 0) + tests.reduce((sum, c) => sum + c.seconds, 0);
  }
  return seconds;
}

/**
 * Each failed test or step with the start of its message, for the end of the run: deno prints a failure's detail
 * where it happened, minutes of output earlier, and a reader of the run's tail (CI keeps the tail) would not see
 * why it failed. A test whose only failure is its steps' ("1 test step failed") is left out: its step is listed.
 */
export function failureDigest(junit: string, linesEach = 12): string[] {
  const out: string[] = [];
  for (const c of junitCases(junit)) {
    if (c.failure === undefined || /^\d+ test steps? failed\.?$/.test(c.failure)) continue;
    out.push(`${c.file}:${c.line} ${c.name}`);
    const lines = c.failure.split("\n");
    for (const line of lines.slice(0, linesEach)) {
      out.push(`    ${line.length > 300 ? `${line.slice(0, 300)}…` : line}`);
    }
    if (lines.length > linesEach) {
      const more = lines.length - linesEach;
      out.push(`    … ${more} more line${more === 1 ? "" : "s"}`);
    }
  }
  return out;
}

/** The per-file times as lines to paste into {@link COST}, longest first. */
export function costLines(seconds: Readonly<Record<string, number>>): string[] {
  return Object.entries(seconds)
    .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : a > b ? 1 : 0))
    .map(([file, s]) => `  "${file}": ${Math.round(s)},`);
}

/** `ms` as `XmYYs`. */
export function minutes(ms: number): string {
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
}

/**
 * Builds this host's dist into `dir/out` as `runDist` in tests/support/installer.ts would (see `SHARED_DIST_ENV`
 * there): the dist, installer and upgrade files each need one, so it is built once, beside the first tests, instead
 * of once per file (bundles, a 150 MB tree, its tarball, an offline check). What it printed goes to `dir/stdout` and
 * `dir/stderr`, then its exit code to `dir/code` (renamed into place, so a reader never sees half of it).
 */
async function buildSharedDist(dir: string): Promise<void> {
  let code = 1;
  try {
    const built = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", join(ROOT, "tools", "dist.ts")],
      cwd: ROOT,
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        NO_COLOR: "1",
        RUST_BACKTRACE: "0",
        HOME: Deno.env.get("HOME") ?? "/root",
        PLOYZ_DIST_TARGETS: "host",
        PLOYZ_DIST_OUT: join(dir, "out"),
      },
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    await Deno.writeFile(join(dir, "stdout"), built.stdout);
    await Deno.writeFile(join(dir, "stderr"), built.stderr);
    code = built.code;
  } catch (error) {
    await Deno.writeTextFile(join(dir, "stdout"), "");
    await Deno.writeTextFile(join(dir, "stderr"), `cannot run tools/dist.ts: ${error}\n`);
  }
  await Deno.writeTextFile(join(dir, "code.new"), `${code}\n`);
  await Deno.rename(join(dir, "code.new"), join(dir, "code"));
}

/**
 * Runs `files` as one `deno test` that also writes a JUnit report to `junit` (read for each file's seconds), and
 * notes the group's wall time in `walls`. Answers the exit code, and the output when it was piped.
 */
async function timedGroup(
  name: string,
  files: string[],
  extra: string[],
  env: Record<string, string>,
  output: "inherit" | "piped",
  junit: string,
  walls: string[],
): Promise<{ code: number; stdout?: Uint8Array; stderr?: Uint8Array }> {
  const started = Date.now();
  const child = denoTest(files, [...extra, `--junit-path=${junit}`], env, output);
  const done = output === "piped" ? await child.output() : await child.status;
  walls.push(`${name}: ${files.length} files in ${minutes(Date.now() - started)}`);
  return done;
}

async function main(): Promise<number> {
  const { concurrent, lane, alone } = groups(testFiles(ROOT, "tests"), COST, ONE_LANE, ALONE);
  const jobs = Deno.env.get("DENO_JOBS") ?? String(DEFAULT_JOBS);
  const started = Date.now();
  const codes: number[] = [await bundleReleaseCode()];
  const scratch = await Deno.makeTempDir({ prefix: "ployz-e2e-" });
  // dist_test installs the shared dist's CLI as nobody, who must reach it.
  await Deno.chmod(scratch, 0o755);
  const sharedDist = join(scratch, "dist");
  await Deno.mkdir(sharedDist);
  const distBuild = buildSharedDist(sharedDist);
  const env = { PLOYZ_TEST_DIST: sharedDist };
  const walls: string[] = [];
  const junit = (group: string): string => join(scratch, `${group}.xml`);
  // The lane's output is held and printed whole once the concurrent group ends, so the two never interleave.
  const laneRun = lane.length === 0
    ? undefined
    : timedGroup("one lane", lane, Deno.args, env, "piped", junit("lane"), walls);
  if (concurrent.length > 0) {
    codes.push(
      (await timedGroup(
        `concurrent (DENO_JOBS=${jobs})`,
        concurrent,
        ["--parallel", ...Deno.args],
        { ...env, DENO_JOBS: jobs },
        "inherit",
        junit("concurrent"),
        walls,
      )).code,
    );
  }
  if (laneRun !== undefined) {
    const out = await laneRun;
    await writeAll(out.stdout ?? new Uint8Array());
    await writeAll(out.stderr ?? new Uint8Array());
    codes.push(out.code);
  }
  // Every group runs even when an earlier one failed, as `deno test` runs every file.
  if (alone.length > 0) {
    codes.push((await timedGroup("alone", alone, Deno.args, env, "inherit", junit("alone"), walls)).code);
  }
  await distBuild;
  const seconds: Record<string, number> = {};
  const failures: string[] = [];
  for (const group of ["concurrent", "lane", "alone"]) {
    const text = await Deno.readTextFile(junit(group)).catch(() => "");
    Object.assign(seconds, fileSeconds(text));
    failures.push(...failureDigest(text));
  }
  console.log(`\nSeconds each file's tests took (for COST in tools/test_e2e.ts), longest first:`);
  console.log(costLines(seconds).join("\n"));
  console.log(`\n${walls.join("; ")}; end-to-end tests in ${minutes(Date.now() - started)} in all`);
  if (failures.length > 0) console.log(`\nWhat failed, and the start of why:\n${failures.join("\n")}`);
  await Deno.remove(scratch, { recursive: true });
  return codes.find((c) => c !== 0) ?? 0;
}

if (import.meta.main) Deno.exit(await main());
