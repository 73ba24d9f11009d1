import assert from "node:assert/strict";
import { join } from "node:path";
import { tempDir } from "../test_support.ts";
import {
  containerId,
  labels,
  writeCgroupV1,
  writeConfig,
  writeMachineProc,
  writePidNet,
  writeTree,
} from "./fixtures.ts";
import { Sampler } from "./sampler.ts";

const T = Date.parse("2026-03-01T12:00:00Z");
const BUSY = containerId(1);
const IDLE = containerId(2);
const NOPID = containerId(3);
const STOPPED = containerId(4);

/** Cgroup counters of a container at the first round. */
const CGROUP = { cpuNs: 1e9, usage: 5_000_000, inactiveFile: 1_000_000, read: 0, write: 0 };
/** The Machine's counters at the first round. */
const MACHINE = {
  busy: 1000,
  idle: 1000,
  memTotalKb: 1000,
  memAvailableKb: 400,
  rx: 100,
  tx: 100,
  load1: 0.5,
};

async function tree(root: string): Promise<{ dockerRoot: string; cgroupRoot: string; procRoot: string }> {
  return await writeTree(root, [
    { id: BUSY, labels: labels("api"), state: { pid: 101 }, cgroup: CGROUP, net: { rx: 1000, tx: 2000 } },
    { id: IDLE, labels: labels("api"), state: { pid: 102 }, cgroup: CGROUP, net: { rx: 1000, tx: 2000 } },
    { id: NOPID, labels: labels("web"), state: { pid: 0 }, cgroup: { ...CGROUP, cpuNs: 0 } },
    { id: STOPPED, labels: labels("worker"), state: { running: false, restartCount: 2 } },
    { id: containerId(5), labels: { "other": "label" }, state: { pid: 105 } },
  ], MACHINE);
}

Deno.test("two rounds: cores from CPU ns over the interval, memory, net and I/O deltas, first round gaps", async () => {
  await using dir = await tempDir();
  const t = await tree(dir.path);
  const sampler = new Sampler(t);
  const first = sampler.sample(T);
  const byId = (round: typeof first, id: string) =>
    round.containers.find((c) => c.identity.containerId === id)!;
  assert.equal(first.containers.length, 4, "only Ployz containers");
  assert.deepEqual(byId(first, BUSY).values, {
    cpu: { gap: "first_sample" },
    memory: 4_000_000,
    "disk_read": { gap: "first_sample" },
    "disk_write": { gap: "first_sample" },
    "net_rx": { gap: "first_sample" },
    "net_tx": { gap: "first_sample" },
    restarts: { gap: "first_sample" },
  });
  assert.deepEqual(first.machine.cpu, { gap: "first_sample" });
  assert.equal(first.machine.memory, 600 * 1024);
  assert.equal(first.machine.load1, 0.5);

  // 10 s later: the busy container used 9 s of CPU, read and wrote, and moved bytes.
  await writeCgroupV1(t.cgroupRoot, `docker/${BUSY}`, {
    ...CGROUP,
    cpuNs: 10e9,
    usage: 9_000_000,
    read: 4096,
    write: 1024,
  });
  await writePidNet(t.procRoot, 101, 1500, 2600);
  await writeMachineProc(t.procRoot, {
    ...MACHINE,
    busy: 2500,
    idle: 1500,
    memAvailableKb: 500,
    rx: 300,
    tx: 150,
    load1: 1.5,
  });
  const second = sampler.sample(T + 10_000);
  assert.deepEqual(byId(second, BUSY).values, {
    cpu: 0.9,
    memory: 8_000_000,
    "disk_read": 4096,
    "disk_write": 1024,
    "net_rx": 500,
    "net_tx": 600,
    restarts: 0,
  });
  assert.equal(byId(second, IDLE).values.cpu, 0);
  assert.deepEqual(byId(second, NOPID).values["net_rx"], { gap: "no_pid" });
  assert.equal(byId(second, NOPID).values.cpu, 0);
  const stopped = byId(second, STOPPED).values;
  assert.deepEqual(stopped.cpu, { gap: "not_running" });
  assert.deepEqual(stopped.memory, { gap: "not_running" });
  assert.equal(stopped.restarts, 0);
  // 1500 busy of 2000 ticks on 2 CPUs; veth traffic is not the Machine's.
  assert.equal(second.machine.cpu, 1.5);
  assert.equal(second.machine["net_rx"], 200);
  assert.equal(second.machine.load1, 1.5);
});

Deno.test("a removed container is one container_gone sample; an unreadable file a gap; a restart a marker", async () => {
  await using dir = await tempDir();
  const t = await tree(dir.path);
  const sampler = new Sampler(t);
  sampler.sample(T);
  sampler.sample(T + 10_000);

  await Deno.remove(join(t.dockerRoot, "containers", IDLE), { recursive: true });
  await Deno.writeTextFile(join(t.dockerRoot, "containers", NOPID, "config.v2.json"), "{ half a fi");
  await Deno.remove(join(t.cgroupRoot, "memory", `docker/${BUSY}`, "memory.usage_in_bytes"));
  // The stopped worker died of OOM and Docker started it again.
  await writeConfig(t.dockerRoot, STOPPED, labels("worker"), {
    running: true,
    pid: 0,
    startedAt: new Date(T + 15_000).toISOString(),
    finishedAt: new Date(T + 14_000).toISOString(),
    exitCode: 137,
    oomKilled: true,
    restartCount: 3,
  });
  const round = sampler.sample(T + 20_000);
  const byId = (id: string) => round.containers.find((c) => c.identity.containerId === id)!;
  assert.equal(byId(IDLE).gone, true);
  assert.deepEqual(byId(IDLE).values.cpu, { gap: "container_gone" });
  assert.equal(byId(NOPID).gone, false);
  assert.deepEqual(byId(NOPID).values.memory, { gap: "config_unreadable" });
  assert.deepEqual(byId(BUSY).values.memory, { gap: "cgroup_file_unreadable" });
  assert.equal(byId(STOPPED).values.restarts, 1);
  assert.deepEqual(
    byId(STOPPED).markers.map((m) => [m.kind, m.detail]),
    [["start", ""], ["die", "137"], ["oom", ""]],
  );

  const next = sampler.sample(T + 30_000);
  assert.equal(next.containers.find((c) => c.identity.containerId === IDLE), undefined, "gone once");
});
