// The daemon's footprint: `ployzd serve` resident memory after a 3-replica Deploy and 5 s idle (goal <= 80 MB),
// and `ployz version` cold start against `deno run` of an empty script with the same flags. Prints figures;
// asserts nothing. The RSS part needs the dev engine (PLOYZ_DOCKER_SOCKET).
import { join } from "node:path";
import { machineEnv, ployz, startServe } from "../../tests/support/daemon.ts";
import { IMAGE, isSocket, randomSubnet } from "../../tests/support/docker.ts";
import { ROOT } from "../../tests/support/spawn.ts";
import { runtimeEnvironment, runtimeFlags } from "../../lib/permissions/mod.ts";

const RUNS = 10;
const ployzLauncher = join(ROOT, "bin", "ployz");
const empty = await Deno.makeTempFile({ prefix: "ployz-empty-", suffix: ".ts" });
// What bin/ployz runs, with the entry point swapped for an empty script.
const baselineArgs = [
  "run",
  "--quiet",
  "--no-prompt",
  "--cached-only",
  "--frozen",
  "--config",
  join(ROOT, "deno.json"),
  "-P=cli",
  empty,
];

async function wallMs(cmd: string, args: string[]): Promise<number> {
  const started = performance.now();
  const out = await new Deno.Command(cmd, { args, stdout: "null", stderr: "piped", env: { NO_COLOR: "1" } })
    .output();
  const ms = performance.now() - started;
  if (out.code !== 0) {
    throw new Error(`"${cmd} ${args.join(" ")}" failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  return ms;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function coldStart(): Promise<void> {
  const base: number[] = [];
  const version: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    base.push(await wallMs(Deno.execPath(), baselineArgs));
    version.push(await wallMs(ployzLauncher, ["version"]));
  }
  const b = median(base);
  const v = median(version);
  console.log(
    `cold start, median of ${RUNS}: "ployz version" ${v.toFixed(0)} ms, empty script ${b.toFixed(0)} ms ` +
      `(${(v / b).toFixed(2)}x, +${(v - b).toFixed(0)} ms for loading the CLI)`,
  );
}

async function idleRss(socket: string): Promise<void> {
  const run = crypto.randomUUID().replaceAll("-", "").slice(0, 8);
  const root = await Deno.makeTempDir({ prefix: "ployz-footprint-" });
  const network = `ployz-footprint-${run}`;
  try {
    const env = await machineEnv(root, { dockerSocket: socket, dockerRoot: root, network, run });
    // The installed unit's environment, or none to measure what it changes (PLOYZ_BENCH_SERVE_ENV=none).
    if (Deno.env.get("PLOYZ_BENCH_SERVE_ENV") !== "none") {
      Object.assign(env.vars, runtimeEnvironment("serve"));
    }
    // The installed unit's and the lab's runtime flags, plus any being measured (PLOYZ_BENCH_SERVE_V8=--a,--b).
    const extra = Deno.env.get("PLOYZ_BENCH_SERVE_V8");
    const runtime = [
      ...runtimeFlags("serve"),
      ...(extra === undefined || extra === "" ? [] : [`--v8-flags=${extra}`]),
    ];
    await using serving = await startServe(env, { runtime });
    let r = await ployz(env, "machine", "init", "--name", "m1", "--subnet", randomSubnet("10.217"));
    if (r.code !== 0) throw new Error(`machine init failed: ${r.stderr}`);
    const compose = join(root, "compose.yaml");
    await Deno.writeTextFile(
      compose,
      `name: fp${run}\nservices:\n  web:\n    image: ${IMAGE}\n    command: ["sleep", "600"]\n` +
        `    deploy: {replicas: 3}\n    stop_signal: SIGKILL\n`,
    );
    r = await ployz(env, "deploy", "-f", compose, "-y", "--monitor", "1s");
    if (r.code !== 0) throw new Error(`deploy failed: ${r.stdout}${r.stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const status = await Deno.readTextFile(`/proc/${serving.child.pid}/status`);
    const field = (name: string) =>
      Number(status.match(new RegExp(`^${name}:\\s+(\\d+) kB`, "m"))?.[1] ?? NaN);
    const rss = field("VmRSS") / 1024;
    console.log(
      `ployzd serve idle RSS after a 3-replica Deploy and 5 s idle: ${rss.toFixed(1)} MB ` +
        `(peak ${(field("VmHWM") / 1024).toFixed(1)} MB; anonymous ${
          (field("RssAnon") / 1024).toFixed(1)
        } MB, ` +
        `file ${(field("RssFile") / 1024).toFixed(1)} MB; goal <= 80 MB; ${
          runtime.join(" ") || "no runtime flags"
        }; environment ${
          Deno.env.get("PLOYZ_BENCH_SERVE_ENV") === "none"
            ? "not set"
            : JSON.stringify(runtimeEnvironment("serve"))
        })`,
    );
    r = await ployz(env, "rm", `fp${run}`, "-y");
    if (r.code !== 0) throw new Error(`rm failed: ${r.stdout}${r.stderr}`);
  } finally {
    const socketArg = `unix://${socket}`;
    const docker = async (args: string[]): Promise<string> =>
      new TextDecoder().decode(
        (await new Deno.Command("docker", {
          args: ["-H", socketArg, ...args],
          stdout: "piped",
          stderr: "null",
        })
          .output()).stdout,
      );
    // Everything the run made carries its label, the ingress proxy too (it holds host ports 80 and 443).
    const ids = (await docker(["ps", "-aq", "--filter", `label=ployz.test=${run}`])).split("\n").filter((
      id,
    ) => id);
    if (ids.length > 0) await docker(["rm", "-f", ...ids]);
    await docker(["network", "rm", network]);
    await Deno.remove(root, { recursive: true });
  }
}

await coldStart();
const socket = Deno.env.get("PLOYZ_DOCKER_SOCKET");
if (socket !== undefined && isSocket(socket)) await idleRss(socket);
else {console.log(
    "daemon_footprint: PLOYZ_DOCKER_SOCKET is unset; idle RSS skipped (it needs a running dockerd)",
  );}

globalThis.addEventListener("unload", () => Deno.removeSync(empty));

Deno.bench({
  name: "deno run of an empty script, cli permission set",
  group: "cold start",
  baseline: true,
  n: RUNS,
  warmup: 1,
  async fn() {
    await wallMs(Deno.execPath(), baselineArgs);
  },
});

Deno.bench({
  name: "bin/ployz version",
  group: "cold start",
  n: RUNS,
  warmup: 1,
  async fn() {
    await wallMs(ployzLauncher, ["version"]);
  },
});
