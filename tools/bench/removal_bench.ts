// Removing a Project of 10 containers over 3 lab Machines (a Global Service, 3 containers, and a replicated one, 7):
// `ployz rm PROJECT -y` until it reports done (removal mark, every proxy acked, each Machine stops and removes its
// own), against the baseline of an operator removing the same containers by hand, `docker rm -f` of the ids on each
// Machine one after another. Each iteration deploys the Project first, outside the timed part.
// Needs root, Linux, the dev dockerd and every command `ployz lab` runs.
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { labUp, missingCommands } from "../../lib/lab/mod.ts";

const HOST_DOCKER = Deno.env.get("PLOYZ_DOCKER_SOCKET") ?? "/var/run/docker.sock";
const IMAGE = "ployz-test/busybox:1";
const PLOYZ = fileURLToPath(new URL("../../bin/ployz", import.meta.url));
const MACHINES = ["m1", "m2", "m3"];

function ready(): boolean {
  try {
    return Deno.build.os === "linux" && Deno.uid() === 0 && missingCommands().length === 0 &&
      Deno.statSync(HOST_DOCKER).isSocket === true;
  } catch {
    return false;
  }
}

const READY = ready();
const tag = crypto.randomUUID().slice(0, 4);
const dir = `/tmp/plz-bench-rm-${tag}`;
const compose = join(dir, "rmb.yaml");

async function run(cmd: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  const out = await new Deno.Command(cmd, { args, env, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")}: ${text}${new TextDecoder().decode(out.stderr)}`);
  }
  return text;
}

function ployz(args: string[]): Promise<string> {
  return run(PLOYZ, args, {
    PLOYZ_DOCKER_SOCKET: HOST_DOCKER,
    PLOYZ_CONFIG_DIR: join(dir, "operator"),
    PLOYZ_RUN_DIR: join(dir, "m1", "run"),
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
  });
}

function docker(m: string, args: string[]): Promise<string> {
  return run("docker", ["-H", `unix://${join(dir, m, "docker.sock")}`, ...args]);
}

async function ids(m: string): Promise<string[]> {
  return (await docker(m, ["ps", "-aq", "--filter", "label=ployz.project=rmb"])).split("\n").filter((s) => s);
}

async function deployTen(): Promise<void> {
  await ployz(["deploy", "-f", compose, "-y", "--monitor", "0s"]);
  const count = (await Promise.all(MACHINES.map(ids))).flat().length;
  if (count !== 10) throw new Error(`expected 10 containers, found ${count}`);
}

if (READY) {
  await labUp({ machines: 3, dir, name: `brm${tag}`, images: [IMAGE] });
  await Deno.writeTextFile(
    compose,
    `name: rmb
services:
  agent:
    image: ${IMAGE}
    command: ["sleep", "3600"]
    deploy: {mode: global}
    stop_grace_period: 1s
  web:
    image: ${IMAGE}
    command: ["sleep", "3600"]
    deploy: {replicas: 7}
    stop_grace_period: 1s
`,
  );
  globalThis.addEventListener("unload", () => {
    // Synchronous on purpose: unload does not wait for promises.
    new Deno.Command(PLOYZ, { args: ["lab", "down", "--dir", dir], stdout: "null", stderr: "null" })
      .outputSync();
  });
}

Deno.bench({
  name: "docker rm -f of the 10 containers by hand, Machine after Machine",
  group: "remove a Project of 10 containers on 3 Machines",
  baseline: true,
  n: 5,
  warmup: 0,
  ignore: !READY,
  async fn(b) {
    await deployTen();
    const byMachine = await Promise.all(MACHINES.map(async (m) => [m, await ids(m)] as const));
    b.start();
    for (const [m, list] of byMachine) await docker(m, ["rm", "-f", ...list]);
    b.end();
  },
});

Deno.bench({
  name: "ployz rm (mark, proxies acked, each Machine removes its own)",
  group: "remove a Project of 10 containers on 3 Machines",
  n: 5,
  warmup: 0,
  ignore: !READY,
  async fn(b) {
    await deployTen();
    b.start();
    const out = await ployz(["rm", "rmb", "-y"]);
    b.end();
    if (!/Removal of "rmb\/\*" done/.test(out)) throw new Error(out);
  },
});
