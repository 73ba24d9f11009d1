/**
 * Runs the end-to-end tests (`tests/**\/*_test.ts`) several files at once: a file spends most of its time waiting
 * on dockerd, WireGuard and daemons starting, not on CPU, and every file names its labs, containers, networks and
 * namespaces uniquely. Files start longest first (by {@link COST}) so the last to finish is a short one. Files
 * sharing one fixed name ({@link ONE_LANE}) run one after another beside them; files needing the machine to
 * themselves ({@link ALONE}) run last, one at a time.
 *
 * Before any test it bundles the CLI and the daemon, so `bin/ployz` and `ployzd serve` run what a release tree ships
 * (see `bundleReleaseCode`).
 *
 * `deno run --allow-read --allow-run --allow-env tools/test_e2e.ts [deno test arguments…]`; `DENO_JOBS` sets how
 * many concurrent files run at once (default {@link DEFAULT_JOBS}). Each group prints deno's own
 * `ok | N passed | M failed` line.
 *
 * @module
 */

import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

/** Files run at once when `DENO_JOBS` is unset: on 2 cores the labs' waiting, not CPU, bounds the suite. */
export const DEFAULT_JOBS = 3;

/**
 * Whole seconds each file's tests took in a CI run (`.ci/run`, three files at a time on 2 cores); only the order
 * matters. A file not listed here is new and of unknown cost, so it starts first.
 */
export const COST: Readonly<Record<string, number>> = {
  "tests/installer_ssh_test.ts": 161,
  "tests/lab_build_test.ts": 161,
  "tests/lab_parallel_deploy_test.ts": 131,
  "tests/installer_e2e_test.ts": 130,
  "tests/upgrade_rpc_e2e_test.ts": 115,
  "tests/operator_ssh_e2e_test.ts": 104,
  "tests/lab_volume_test.ts": 93,
  "tests/dist_test.ts": 80,
  "tests/lab_deploy_test.ts": 77,
  "tests/lab_machines_test.ts": 76,
  "tests/lab_serving_test.ts": 73,
  "tests/lab_gone_test.ts": 72,
  "tests/lab_removal_test.ts": 72,
  "tests/lab_compose_corpus_test.ts": 69,
  "tests/lab_container_net_test.ts": 65,
  "tests/lab_proxy_first_test.ts": 64,
  "tests/lab_drain_test.ts": 63,
  "tests/lab_https_test.ts": 63,
  "tests/deploy_e2e_test.ts": 59,
  "tests/lab_registry_test.ts": 47,
  "tests/deploy_faults_e2e_test.ts": 43,
  "tests/lab_routing_test.ts": 40,
  "tests/lab_placement_test.ts": 35,
  "tests/example_lab_test.ts": 29,
  "tests/lab_catch_up_test.ts": 29,
  "tests/lab_test.ts": 28,
  "tests/example_hello_test.ts": 27,
  "tests/lab_metrics_test.ts": 20,
  "tests/serving_e2e_test.ts": 19,
  "tests/caddy_ingress_test.ts": 10,
  "tests/observe_e2e_test.ts": 10,
  "tests/lab_network_test.ts": 9,
  "tests/lab_trust_test.ts": 9,
  "tests/logs_e2e_test.ts": 9,
  "tests/permissions_test.ts": 9,
  "tests/dns_respawn_test.ts": 8,
  "tests/wireguard_netns_test.ts": 8,
  "tests/dns_restart_test.ts": 6,
  "tests/docker_health_test.ts": 5,
  "tests/store_processes_test.ts": 5,
  "tests/dns_flood_test.ts": 4,
  "tests/observe_metrics_e2e_test.ts": 4,
  "tests/serve_e2e_test.ts": 4,
  "tests/build_docker_test.ts": 3,
  "tests/docker_network_test.ts": 3,
  "tests/store_compaction_test.ts": 3,
  "tests/cli_test.ts": 2,
  "tests/dns_network_netns_test.ts": 2,
  "tests/docker_engine_test.ts": 2,
  "tests/module_graph_test.ts": 2,
  "tests/serve_mesh_failure_test.ts": 2,
  "tests/compose_corpus_test.ts": 1,
  "tests/compose_keys_docker_test.ts": 1,
  "tests/dns_e2e_test.ts": 1,
  "tests/docker_events_test.ts": 1,
  "tests/docker_grant_test.ts": 1,
  "tests/docker_registry_test.ts": 1,
  "tests/install_script_test.ts": 1,
  "tests/request_caps_e2e_test.ts": 1,
  "tests/shipped_files_docker_test.ts": 1,
  "tests/systemd_door_test.ts": 1,
  "tests/volume_btrfs_test.ts": 1,
  "tests/docker_images_test.ts": 0,
  "tests/exec_handlers_docker_test.ts": 0,
  "tests/installer_fsync_test.ts": 0,
  "tests/mesh_firewall_netns_test.ts": 0,
  "tests/systemd_units_test.ts": 1,
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
  "tests/lab_container_net_test.ts":
    "a flushed firewall must be put back within one 2 s mesh tick (plus 1.5 s), timed by the host's clock",
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

async function main(): Promise<number> {
  const { concurrent, lane, alone } = groups(testFiles(ROOT, "tests"), COST, ONE_LANE, ALONE);
  const jobs = Deno.env.get("DENO_JOBS") ?? String(DEFAULT_JOBS);
  const codes: number[] = [await bundleReleaseCode()];
  // The lane's output is held and printed whole once the concurrent group ends, so the two never interleave.
  const laneRun = lane.length === 0 ? undefined : denoTest(lane, Deno.args, {}, "piped").output();
  if (concurrent.length > 0) {
    codes.push(
      (await denoTest(concurrent, ["--parallel", ...Deno.args], { DENO_JOBS: jobs }, "inherit").status).code,
    );
  }
  if (laneRun !== undefined) {
    const out = await laneRun;
    await writeAll(out.stdout);
    await writeAll(out.stderr);
    codes.push(out.code);
  }
  // Every group runs even when an earlier one failed, as `deno test` runs every file.
  if (alone.length > 0) codes.push((await denoTest(alone, Deno.args, {}, "inherit").status).code);
  return codes.find((c) => c !== 0) ?? 0;
}

if (import.meta.main) Deno.exit(await main());
