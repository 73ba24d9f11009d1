// Removing a Project of 10 containers over 3 lab Machines (a Global Service, 3 containers, and a replicated one, 7):
// `ployz rm PROJECT -y` until it reports done (removal mark, every proxy acked, each Machine stops and removes its
// own), against the baseline of an operator removing the same containers by hand, `docker rm -f` of the ids on each
// Machine one after another. Each iteration deploys the Project first, outside the timed part.
// Needs root, Linux, the dev dockerd and every command `ployz lab` runs (tests/support/lab.ts brings the lab up).
import { join } from "node:path";
import { type Lab, startLab } from "../../tests/support/lab.ts";
import { sleepService } from "../../tests/support/web_service.ts";
import { LAB_READY, labBench, labDownSync, mustRun } from "./lab_support.ts";

const MACHINES = ["m1", "m2", "m3"];
let lab: Lab | undefined;
let compose = "";

function ployz(args: string[]): Promise<string> {
  return mustRun(lab!.on("m1", args));
}

async function ids(m: string): Promise<string[]> {
  return (await mustRun(lab!.docker(m, ["ps", "-aq", "--filter", "label=ployz.project=rmb"]))).split("\n")
    .filter((s) => s);
}

async function deployTen(): Promise<void> {
  await ployz(["deploy", "-f", compose, "-y", "--monitor", "0s"]);
  const count = (await Promise.all(MACHINES.map(ids))).flat().length;
  if (count !== 10) throw new Error(`expected 10 containers, found ${count}`);
}

if (LAB_READY) {
  lab = await startLab("brm", 3);
  const dir = lab.dir;
  globalThis.addEventListener("unload", () => labDownSync(dir));
  compose = join(dir, "rmb.yaml");
  await Deno.writeTextFile(
    compose,
    `name: rmb\nservices:\n${sleepService("agent", "{mode: global}")}${sleepService("web", "{replicas: 7}")}`,
  );
}

labBench({
  name: "docker rm -f of the 10 containers by hand, Machine after Machine",
  group: "remove a Project of 10 containers on 3 Machines",
  baseline: true,
  n: 5,
  warmup: 0,
  async fn(b) {
    await deployTen();
    const byMachine = await Promise.all(MACHINES.map(async (m) => [m, await ids(m)] as const));
    b.start();
    for (const [m, list] of byMachine) await mustRun(lab!.docker(m, ["rm", "-f", ...list]));
    b.end();
  },
});

labBench({
  name: "ployz rm (mark, proxies acked, each Machine removes its own)",
  group: "remove a Project of 10 containers on 3 Machines",
  n: 5,
  warmup: 0,
  async fn(b) {
    await deployTen();
    b.start();
    const out = await ployz(["rm", "rmb", "-y"]);
    b.end();
    if (!/Removal of "rmb\/\*" done/.test(out)) throw new Error(out);
  },
});
