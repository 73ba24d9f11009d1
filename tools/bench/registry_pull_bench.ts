// Cold Deploy from a registry vs `docker pull` + `docker run` by hand, on the same three lab dockerds in the same run.
// A 3-Machine lab, Debian's docker-registry in its underlay namespace (TLS, htpasswd). Each round pushes fresh
// images of the same size (a random layer of PLOYZ_BENCH_LAYER_MB, default 20 MB, on busybox) that no Machine holds:
// - ployz: `ployz deploy` of 1 Service x 3 replicas (one per Machine), --parallel PLOYZ_BENCH_PARALLEL (default 3),
//   no health check, monitor 0 s:
//   digest resolution, a pull task on each Machine, create and start; the CLI bundled as a release runs it, and
//   once more (a fourth fresh image) loaded from source (PLOYZ_LAUNCHER_BUNDLE=0), the two first in turn;
// - by hand, sequential: on m1, m2, m3 in turn `docker pull` then `docker run -d` (what an operator types);
// - by hand, parallel: the same three pull+run sequences at once (a script would), on Docker's default network
//   (the baseline of the goal) and, a fifth fresh image, with `--network ployz` (the network a Deploy attaches to,
//   a user-defined bridge whose embedded DNS Docker sets up on every start: an extra line, for the record); then,
//   the image present, `docker run -d` on the three at once on each of the two networks; the pulls and runs at
//   once go before the Deploys in even rounds and after them in odd ones, and each round's own ratio of the cold
//   Deploy to them is kept too (its median is printed beside the ratio of the medians);
// - warm: the same `ployz deploy` again (nothing pulled, nothing to do; bundled and from source), and with a
//   changed environment variable (three replacements, nothing pulled), one at a time as by default and then with
//   `update_config.parallelism: 3` (the three at once);
// - peers first: a fourth fresh image pulled on m1, then fetched by m2 from the registry (`docker pull`, Docker's
//   own transfer, which a pull operation runs) and by m3 from m1 over the mesh (`ployz image copy`, which an image
//   operation runs: the time the target Machine reports for save, transfer and load, without the CLI's start).
// Run: sudo deno run --allow-all tools/bench/registry_pull_bench.ts (PLOYZ_BENCH_ROUNDS, default 3; even rounds
// run the CLI from source first).
import { join } from "node:path";
import { startLab } from "../../tests/support/lab.ts";
import { startRegistry } from "../../tests/support/registry.ts";
import { IMAGE } from "../../tests/support/docker.ts";
import { run } from "../../tests/support/spawn.ts";
import { LAB_READY, percentile, Series } from "./lab_support.ts";
import { bundleCli } from "../build/bundle.ts";

const ROUNDS = Number(Deno.env.get("PLOYZ_BENCH_ROUNDS") ?? "3");
const LAYER_MB = Number(Deno.env.get("PLOYZ_BENCH_LAYER_MB") ?? "20");
const USER = "bench";
const PASSWORD = crypto.randomUUID();
const MACHINES = ["m1", "m2", "m3"];
/** `ployz deploy --parallel`; with 1 the operations run one at a time and the pulls still start together. */
const PARALLEL = Deno.env.get("PLOYZ_BENCH_PARALLEL") ?? "3";
/**
 * With PLOYZ_BENCH_TRACE=1 the first cold deploy prints when each of its events arrived, instead of counting, and
 * the CLI's own marks (PLOYZ_TRACE=1: its phases and each RPC, in ms since it started).
 */
const TRACE = Deno.env.get("PLOYZ_BENCH_TRACE") === "1";
/** The launcher's environment that runs the CLI from source instead of its bundle. */
const SOURCE = { PLOYZ_LAUNCHER_BUNDLE: "0" };

/**
 * Runs a cold `ployz deploy --json` and prints each event's arrival, in ms from the command's start, then the CLI's
 * own marks.
 */
async function trace(env: Record<string, string>, compose: string): Promise<void> {
  const started = performance.now();
  const child = new Deno.Command(join(import.meta.dirname!, "../../bin/ployz"), {
    args: ["deploy", "-f", compose, "-y", "--json", "--parallel", PARALLEL, "--monitor", "0s"],
    env: { PATH: Deno.env.get("PATH")!, ...env, PLOYZ_TRACE: "1" },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const marks = new Response(child.stderr).text();
  let buffer = "";
  for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
    buffer += chunk;
    let at: number;
    while ((at = buffer.indexOf("\n")) >= 0) {
      const event = JSON.parse(buffer.slice(0, at));
      buffer = buffer.slice(at + 1);
      const what = event.type === "step"
        ? `step ${event.index} ${event.status} ${event.phase ?? ""} ${event.detail ?? ""}`.slice(0, 140)
        : event.type;
      console.log(`${(performance.now() - started).toFixed(0).padStart(6)} ms  ${what}`);
    }
  }
  await child.status;
  console.log(`${(performance.now() - started).toFixed(0).padStart(6)} ms  exit`);
  console.log((await marks).split("\n").filter((line) => line.startsWith("ployz trace ")).join("\n"));
}

async function must(cmd: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  const out = await run(cmd, args, env);
  if (out.code !== 0) throw new Error(`${cmd} ${args.join(" ")}: ${out.stderr}${out.stdout}`);
  return out.stdout;
}

async function withStdin(
  cmd: string,
  args: string[],
  env: Record<string, string>,
  input: string,
): Promise<void> {
  const done = await run(cmd, args, env, input);
  if (done.code !== 0) throw new Error(`${cmd} ${args.join(" ")} failed: ${done.stderr}`);
}

if (!LAB_READY) {
  console.log("registry_pull_bench: needs root and the lab's commands; skipping");
} else {
  // The CLI as a release tree runs it: bundled into one file (tools/build/bundle.ts).
  console.log(`bundled the CLI: ${await bundleCli(join(import.meta.dirname!, "..", ".."))}`);
  const samples = new Series();
  await using lab = await startLab("rp", 3);
  const namespace = `${lab.name}-u`;
  await using registry = await startRegistry({
    address: "192.0.2.1",
    port: 20_000 + Math.floor(Math.random() * 20_000),
    namespace,
    tls: true,
    user: { name: USER, password: PASSWORD },
    trustedByDocker: true,
  });
  const reg = registry.host;
  const dockerConfig = join(lab.dir, "docker-config");
  await Deno.mkdir(dockerConfig);
  const sock = (m: string) => ["-H", `unix://${join(lab.dir, m, "docker.sock")}`];
  const dockerEnv = { DOCKER_CONFIG: dockerConfig };
  await withStdin(
    "docker",
    [...sock("m1"), "login", "-u", USER, "--password-stdin", reg],
    dockerEnv,
    PASSWORD,
  );
  await withStdin(
    join(import.meta.dirname!, "../../bin/ployz"),
    ["registry", "login", reg, "-u", USER, "--password-stdin"],
    { PATH: Deno.env.get("PATH")!, ...lab.envOn("m1") },
    PASSWORD,
  );
  const blob = join(lab.dir, "layer.bin");
  /** Pushes a fresh image holding `LAYER_MB` of random bytes, then removes every copy of it from m1. */
  const fresh = async (name: string): Promise<string> => {
    const bytes = new Uint8Array(LAYER_MB * 1_000_000);
    for (let i = 0; i < bytes.length; i += 65_536) crypto.getRandomValues(bytes.subarray(i, i + 65_536));
    await Deno.writeFile(blob, bytes);
    const ref = `${reg}/bench/${name}:1`;
    const box = `box-${name}`;
    await must("docker", [...sock("m1"), "create", "--name", box, IMAGE, "true"]);
    await must("docker", [...sock("m1"), "cp", blob, `${box}:/layer.bin`]);
    const id = (await must("docker", [...sock("m1"), "commit", box, ref])).trim();
    await must("docker", [...sock("m1"), "rm", box]);
    await must("docker", [...sock("m1"), "push", ref], dockerEnv);
    await must("docker", [...sock("m1"), "rmi", "-f", id]);
    return ref;
  };
  /** Each round's cold Deploy over its own pulls and runs by hand at once. */
  const roundRatios: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const viaPloyz = await fresh(`p${round}`);
    const viaSource = await fresh(`o${round}`);
    const bySeq = await fresh(`s${round}`);
    const byPar = await fresh(`q${round}`);
    const byParPloyz = await fresh(`n${round}`);
    const compose = join(lab.dir, `bench${round}.yaml`);
    const project = (name: string, image: string, env: string, parallelism?: number) =>
      `name: ${name}\nservices:\n  web:\n    image: ${image}\n    command: ["sleep", "600"]\n` +
      `    environment: {ROUND: "${env}"}\n    deploy: {replicas: 3${
        parallelism === undefined ? "" : `, update_config: {parallelism: ${parallelism}}`
      }}\n    healthcheck: {disable: true}\n    stop_signal: SIGKILL\n`;
    const text = (env: string, parallelism?: number) => project(`bench${round}`, viaPloyz, env, parallelism);
    await Deno.writeTextFile(compose, text("a"));
    const fromSource = join(lab.dir, `benchsrc${round}.yaml`);
    await Deno.writeTextFile(fromSource, project(`benchsrc${round}`, viaSource, "a"));
    const deploy = async (file = compose, launcher: Record<string, string> = {}): Promise<number> => {
      const started = performance.now();
      const out = await lab.ployz([
        "deploy",
        "-f",
        file,
        "-y",
        "--parallel",
        PARALLEL,
        "--monitor",
        "0s",
      ], { ...lab.envOn("m1"), ...launcher });
      const ms = performance.now() - started;
      if (out.code !== 0) throw new Error(`deploy failed: ${out.stderr}${out.stdout}`);
      return ms;
    };
    // The same cold Deploy with the CLI loaded module by module from source instead of the bundle; the two go
    // first in turn, so neither always runs beside the other's fresh containers.
    const sourceCold = async (): Promise<void> =>
      samples.record(
        "ployz deploy, cold, CLI from source (3 pulls, 3 containers)",
        await deploy(fromSource, SOURCE),
      );
    // By hand, the three Machines at once, on each network; even rounds run it before the Deploys, odd ones
    // after, so neither side always meets the other's aftermath (the daemons' bookkeeping, the pushes above).
    let handAtOnce = NaN;
    const atOnce = async (): Promise<void> => {
      let started = performance.now();
      await Promise.all(MACHINES.map(async (m) => {
        await must("docker", [...sock(m), "pull", byPar], dockerEnv);
        await must("docker", [...sock(m), "run", "-d", "--name", `hand-q${round}`, byPar, "sleep", "600"]);
      }));
      handAtOnce = performance.now() - started;
      samples.record("docker pull + run by hand, three Machines at once", handAtOnce);
      started = performance.now();
      await Promise.all(MACHINES.map(async (m) => {
        await must("docker", [...sock(m), "pull", byParPloyz], dockerEnv);
        await must("docker", [
          ...sock(m),
          "run",
          "-d",
          "--name",
          `hand-n${round}`,
          "--network",
          "ployz",
          byParPloyz,
          "sleep",
          "600",
        ]);
      }));
      samples.record(
        "docker pull + run by hand, three Machines at once, on the ployz network",
        performance.now() - started,
      );
    };
    if (round % 2 === 0) await atOnce();
    if (round % 2 === 0) await sourceCold();
    let coldMs = NaN;
    if (round === 1 && TRACE) {
      await trace(lab.envOn("m1"), compose);
      for (const m of MACHINES) {
        const log = await Deno.readTextFile(join(lab.dir, m, "ployzd.log")).catch(() => "");
        for (const line of log.split("\n").filter((l) => l.includes("pulled image"))) {
          console.log(`${m}: ${line}`);
        }
      }
    } else {
      coldMs = await deploy();
      samples.record("ployz deploy, cold (3 pulls, 3 containers)", coldMs);
    }
    if (round % 2 === 1) await sourceCold();
    if (round % 2 === 1) await atOnce();
    // The same round's two figures, taken a few seconds apart: a ratio less at the mercy of the host's load.
    if (!Number.isNaN(coldMs)) {
      roundRatios.push(coldMs / handAtOnce);
    }

    let started = performance.now();
    for (const m of MACHINES) {
      await must("docker", [...sock(m), "pull", bySeq], dockerEnv);
      await must("docker", [...sock(m), "run", "-d", "--name", `hand-s${round}`, bySeq, "sleep", "600"]);
    }
    samples.record("docker pull + run by hand, one Machine after another", performance.now() - started);
    // What starting a container costs by network, the image already present: Docker's default network (the
    // baseline above) and the Ployz network a Deploy attaches to (user-defined bridge, Docker's embedded DNS).
    for (
      const [label, network] of [["default network", []], ["the ployz network", ["--network", "ployz"]]]
    ) {
      started = performance.now();
      await Promise.all(MACHINES.map((m) =>
        must("docker", [
          ...sock(m),
          "run",
          "-d",
          "--name",
          `hand-${network.length}r${round}`,
          ...network,
          byPar,
          "sleep",
          "600",
        ])
      ));
      samples.record(
        `docker run by hand, image present, three Machines at once, ${label}`,
        performance.now() - started,
      );
    }

    samples.record("ployz deploy, warm, nothing changed", await deploy());
    samples.record(
      "ployz deploy, warm, nothing changed, CLI from source",
      await deploy(fromSource, SOURCE),
    );
    const shared = await fresh(`c${round}`);
    await must("docker", [...sock("m1"), "pull", shared], dockerEnv);
    started = performance.now();
    await must("docker", [...sock("m2"), "pull", shared], dockerEnv);
    samples.record("image to a Machine: registry pull (docker pull)", performance.now() - started);
    const copied = JSON.parse(
      (await lab.on("m1", ["image", "copy", shared, "--from", "m1", "--to", "m3", "--json"])).stdout,
    ) as { transferred: boolean; "duration_ms": number };
    if (!copied.transferred) {
      throw new Error(`image copy to m3 transferred nothing: ${JSON.stringify(copied)}`);
    }
    samples.record("image to a Machine: peer copy over the mesh (ployz image copy)", copied.duration_ms);
    await Deno.writeTextFile(compose, text("b"));
    samples.record("ployz deploy, warm, 3 replaced (nothing pulled)", await deploy());
    await Deno.writeTextFile(compose, text("c", 3));
    samples.record("ployz deploy, warm, 3 replaced, update_config.parallelism 3", await deploy());
    await lab.on("m1", ["rm", `bench${round}`, "-y"]);
    await lab.on("m1", ["rm", `benchsrc${round}`, "-y"]);
    for (const m of MACHINES) {
      await run("docker", [
        ...sock(m),
        "rm",
        "-f",
        `hand-s${round}`,
        `hand-q${round}`,
        `hand-n${round}`,
        `hand-0r${round}`,
        `hand-2r${round}`,
      ]);
    }
  }
  samples.print(0);
  const median = (name: string): number => {
    const values = ([...samples.entries()].find(([n]) => n === name)?.[1] ?? [NaN]).sort((a, b) => a - b);
    return values[Math.floor(values.length / 2)];
  };
  const cold = median("ployz deploy, cold (3 pulls, 3 containers)");
  const source = median("ployz deploy, cold, CLI from source (3 pulls, 3 containers)");
  console.log(
    `cold deploy, CLI from source / by hand at once: ${
      (source / median("docker pull + run by hand, three Machines at once")).toFixed(2)
    }x; bundled / from source: ${
      (cold / source).toFixed(2)
    }x; warm, nothing changed, bundled / from source: ${
      (median("ployz deploy, warm, nothing changed") /
        median("ployz deploy, warm, nothing changed, CLI from source")).toFixed(2)
    }x`,
  );
  console.log(
    `cold deploy / by hand one after another: ${
      (cold / median("docker pull + run by hand, one Machine after another")).toFixed(2)
    }x; / by hand at once: ${
      (cold / median("docker pull + run by hand, three Machines at once")).toFixed(2)
    }x ` +
      `(${LAYER_MB} MB layer, ${ROUNDS} rounds, --parallel ${PARALLEL}, medians)`,
  );
  // With PLOYZ_BENCH_TRACE=1 and one round, the traced Deploy is the only cold one: no round has a ratio.
  console.log(
    `cold deploy / by hand at once, median of the rounds' own ratios: ${
      roundRatios.length === 0 ? "none (no untraced round)" : `${percentile(roundRatios, 0.5).toFixed(2)}x`
    }`,
  );
  console.log(
    `(extra line) cold deploy / by hand at once with --network ployz: ${
      (cold / median("docker pull + run by hand, three Machines at once, on the ployz network")).toFixed(2)
    }x; CLI from source: ${
      (source / median("docker pull + run by hand, three Machines at once, on the ployz network")).toFixed(
        2,
      )
    }x`,
  );
  console.log(
    `warm, 3 replaced: update_config.parallelism 3 / one at a time: ${
      (median("ployz deploy, warm, 3 replaced, update_config.parallelism 3") /
        median("ployz deploy, warm, 3 replaced (nothing pulled)")).toFixed(2)
    }x; parallelism 3 / docker run by hand, image present, three at once on the ployz network: ${
      (median("ployz deploy, warm, 3 replaced, update_config.parallelism 3") /
        median("docker run by hand, image present, three Machines at once, the ployz network")).toFixed(2)
    }x`,
  );
  console.log(
    `peer copy over the mesh / registry pull: ${
      (median("image to a Machine: peer copy over the mesh (ployz image copy)") /
        median("image to a Machine: registry pull (docker pull)")).toFixed(2)
    }x (${LAYER_MB} MB layer, medians)`,
  );
}
