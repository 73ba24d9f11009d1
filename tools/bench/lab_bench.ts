// Lab benchmarks on real Machines (root, Linux, dockerd, wireguard-go): one 4-Machine lab per impairment profile
// (PLOYZ_BENCH_PROFILES, default "clean,regional,flap"), 3 joined and m4 kept for `machine add`.
// - row propagation: a container row from the Machine that wrote it to every other Machine (≥ 100 samples);
//   baseline: the same row becoming visible on its own Machine after `docker create` returned.
// - heal convergence: after a partition m1,m2 / m3 in which both sides wrote, the time from `heal` until the three
//   stores are identical; baseline: the same two writes converging without a partition.
// - machine add (clean only): from the first enrollment call until the joiner participates; baseline: one
//   `machine ls` round trip to the Entry Machine.
// p50/p99 of every series are printed at the end, next to Deno's own table.
import { join } from "node:path";
import {
  daemonClient,
  labHeal,
  labPartition,
  type LabState,
  labUp,
  type Profile,
} from "../../lib/lab/mod.ts";
import { configHistory, enrollMachine } from "../../lib/mesh/mod.ts";
import { openConfigStore } from "../../lib/store/mod.ts";
import { pollUntil } from "../../lib/util/mod.ts";
import { IMAGE, ownedLabelArgs } from "../../tests/support/docker.ts";
import { readRows, storeDigest, storeFile } from "../../tests/support/lab_store.ts";
import { LAB_READY, labBench, labDownSync, Series } from "./lab_support.ts";

const PROFILE_LIST = (Deno.env.get("PLOYZ_BENCH_PROFILES") ?? "clean,regional,flap").split(",") as Profile[];

const samples = new Series();
const labs = new Map<Profile, { state: LabState; ids: Record<string, string> }>();
let serial = 0;

function docker(state: LabState, machine: string, args: string[]): string {
  const m = state.plan.machines.find((x) => x.name === machine)!;
  const out = new Deno.Command("docker", {
    args: ["-H", `unix://${m.dockerSocket}`, ...args],
    stdout: "piped",
  })
    .outputSync();
  if (!out.success) throw new Error(`docker ${args[0]} on ${machine} failed`);
  return new TextDecoder().decode(out.stdout).trim();
}

function createRow(profile: Profile, machine: string): string {
  const { state, ids } = labs.get(profile)!;
  const name = `b${++serial}`;
  docker(state, machine, [
    "create",
    "--name",
    name,
    ...ownedLabelArgs(ids[machine], "bench", name),
    IMAGE,
    "true",
  ]);
  return name;
}

function holds(state: LabState, machine: string, name: string): boolean {
  const m = state.plan.machines.find((x) => x.name === machine)!;
  for (const row of readRows(storeFile(m), "containers").values()) if (row.name === name) return true;
  return false;
}

/** Polls `check` every 2 ms (the figure is a convergence time) for at most `timeoutMs`. */
async function until(check: () => boolean, timeoutMs = 30_000): Promise<void> {
  if (!await pollUntil(check, { timeoutMs, intervalMs: 2 })) {
    throw new Error("the bench timed out waiting for the lab");
  }
}

function converged(state: LabState): boolean {
  const digests = new Set(["m1", "m2", "m3"].map((n) => {
    const m = state.plan.machines.find((x) => x.name === n)!;
    return storeDigest(storeFile(m));
  }));
  return digests.size === 1;
}

async function setUp(profile: Profile): Promise<void> {
  const tag = crypto.randomUUID().slice(0, 4);
  const dir = `/tmp/plz-bench-${profile}-${tag}`;
  const { state } = await labUp({
    machines: 4,
    join: 3,
    dir,
    name: `b${profile.slice(0, 3)}${tag}`,
    profile,
  });
  const ids: Record<string, string> = {};
  for (const m of state.plan.machines) {
    using client = daemonClient(m);
    ids[m.name] = (await client.status()).machine.id;
  }
  labs.set(profile, { state, ids });
  await until(() => converged(state));
}

if (LAB_READY) {
  for (const profile of PROFILE_LIST) await setUp(profile);
  globalThis.addEventListener("unload", () => {
    samples.print(1);
    for (const { state } of labs.values()) labDownSync(state.plan.dir);
  });
}

for (const profile of PROFILE_LIST) {
  labBench({
    name: `${profile}: docker create → row on its own Machine`,
    group: `row propagation (${profile})`,
    baseline: true,
    n: 100,
    warmup: 1,
    async fn(b) {
      const { state } = labs.get(profile)!;
      b.start();
      const name = createRow(profile, "m3");
      const t0 = performance.now();
      await until(() => holds(state, "m3", name));
      b.end();
      samples.record(`${profile} own-Machine publish`, performance.now() - t0);
    },
  });

  labBench({
    name: `${profile}: row on its own Machine → on every other Machine`,
    group: `row propagation (${profile})`,
    n: 100,
    warmup: 1,
    async fn(b) {
      const { state } = labs.get(profile)!;
      const origin = ["m1", "m2", "m3"][serial % 3];
      const name = createRow(profile, origin);
      await until(() => holds(state, origin, name));
      b.start();
      const t0 = performance.now();
      await until(() => ["m1", "m2", "m3"].every((m) => holds(state, m, name)));
      b.end();
      samples.record(`${profile} propagation to all`, performance.now() - t0);
    },
  });

  labBench({
    name: `${profile}: two writes converge without a partition`,
    group: `heal convergence (${profile})`,
    baseline: true,
    n: 5,
    warmup: 1,
    async fn(b) {
      const { state } = labs.get(profile)!;
      b.start();
      const t0 = performance.now();
      const [a, c] = [createRow(profile, "m1"), createRow(profile, "m3")];
      await until(() => holds(state, "m1", a) && holds(state, "m3", c));
      await until(() => converged(state));
      b.end();
      samples.record(`${profile} convergence without partition`, performance.now() - t0);
    },
  });

  labBench({
    name: `${profile}: heal → identical stores after both sides wrote`,
    group: `heal convergence (${profile})`,
    n: 5,
    warmup: 1,
    async fn(b) {
      const { state } = labs.get(profile)!;
      const dir = state.plan.dir;
      await labPartition({ dir, groupA: ["m1", "m2"], groupB: ["m3"] });
      const [a, c] = [createRow(profile, "m1"), createRow(profile, "m3")];
      await until(() => holds(state, "m2", a) && holds(state, "m3", c));
      b.start();
      const t0 = performance.now();
      await labHeal({ dir });
      await until(() => converged(state), 120_000);
      b.end();
      samples.record(`${profile} convergence after heal`, performance.now() - t0);
    },
  });
}

if (PROFILE_LIST.includes("clean")) {
  labBench({
    name: "clean: one machine ls round trip to the Entry Machine",
    group: "machine add (clean)",
    baseline: true,
    n: 20,
    async fn() {
      const { state } = labs.get("clean")!;
      using entry = daemonClient(state.plan.machines[0]);
      await entry.listMachines();
    },
  });

  labBench({
    name: "clean: machine add until participating (m4 leaves between runs)",
    group: "machine add (clean)",
    n: 5,
    warmup: 0,
    async fn(b) {
      const { state } = labs.get("clean")!;
      const [m1, , , m4] = state.plan.machines;
      using joiner = daemonClient(m4);
      if ((await joiner.status()).machine.phase !== "uninitialized") await joiner.leaveMachine({});
      using entry = daemonClient(m1);
      const config = openConfigStore(join(state.plan.dir, "operator", "config.db"));
      try {
        b.start();
        const t0 = performance.now();
        const result = await enrollMachine({
          entry,
          joiner,
          history: configHistory(config),
          machineName: "m4",
        });
        b.end();
        if (!result.participating) throw new Error("m4 did not participate");
        samples.record("clean machine add to participating", performance.now() - t0);
      } finally {
        config.close();
      }
    },
  });
}
