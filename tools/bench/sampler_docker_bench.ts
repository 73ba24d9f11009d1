// One metrics sampling round over 50 real containers of the dev dockerd (PLOYZ_DOCKER_SOCKET): the Sampler reading
// their cgroups, /proc and Docker's state files, against asking Docker's own stats API once per container (what
// `docker stats --no-stream` does, the baseline). The Sampler's CPU per round is also printed as % of one core per
// 10 s round. The containers are plain busybox `sleep`s with random names, removed at exit; needs root and Docker.
// The same round on fixture trees is lib/observe/metrics/sampler_bench.ts.
import process from "node:process";
import Docker from "dockerode";
import { Sampler } from "../../lib/observe/mod.ts";
import { DOCKER_SOCKET, dockerRootOf, IMAGE } from "../../tests/support/docker.ts";
import { lacking } from "../../tests/support/needs.ts";

const N = 50;
const READY = lacking("docker") === undefined && lacking("root") === undefined;
const run = crypto.randomUUID().slice(0, 8);
const docker = new Docker({ socketPath: DOCKER_SOCKET });
const ids: string[] = [];
let sampler: Sampler | undefined;

if (READY) {
  globalThis.addEventListener("unload", () => {
    // An unload listener cannot wait on a promise: removed by the CLI, synchronously.
    new Deno.Command("docker", {
      args: ["-H", `unix://${DOCKER_SOCKET}`, "rm", "-f", ...ids],
      stdout: "null",
      stderr: "null",
    }).outputSync();
  });
  for (let i = 0; i < N; i += 10) {
    await Promise.all(Array.from({ length: Math.min(10, N - i) }, async (_, j) => {
      const c = await docker.createContainer({
        Image: IMAGE,
        name: `ployz-bench-${run}-${i + j}`,
        Cmd: ["sleep", "3600"],
        Labels: {
          "ployz.managed": "1",
          "ployz.machine": "machine-1",
          "ployz.project": "shop",
          "ployz.service": `svc-${(i + j) % 5}`,
          "ployz.deployment": "dep-1",
          "ployz.slot": "0",
          "ployz.bench": run,
        },
        HostConfig: { LogConfig: { Type: "local", Config: {} } },
      });
      ids.push(c.id);
      await c.start();
    }));
  }
  sampler = new Sampler({ dockerRoot: await dockerRootOf(docker) });
  // A warm round, then the figure to report.
  sampler.sample();
  const rounds = 20;
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < rounds; i++) sampler.sample(Date.now() + i);
  const wallMs = (performance.now() - started) / rounds;
  const used = process.cpuUsage(cpu);
  const cpuMs = (used.user + used.system) / 1000 / rounds;
  console.log(
    `sampler round, ${N} real containers: ${cpuMs.toFixed(2)} ms CPU (${wallMs.toFixed(2)} ms wall) = ` +
      `${(cpuMs / 10_000 * 100).toFixed(3)} % of one core per 10 s`,
  );
}

Deno.bench({
  name: `Docker stats API, one-shot, for each of ${N} containers`,
  group: "round",
  baseline: true,
  n: 5,
  ignore: !READY,
  async fn(): Promise<void> {
    await Promise.all(ids.map((id) => docker.getContainer(id).stats({ stream: false, "one-shot": true })));
  },
});

Deno.bench({
  name: `sampler round, ${N} real containers`,
  group: "round",
  n: 5,
  ignore: !READY,
  fn(): void {
    sampler!.sample();
  },
});
