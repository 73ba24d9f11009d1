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
} from "./fixtures.ts";
import { Sampler } from "./sampler.ts";

const T = Date.parse("2026-03-01T12:00:00Z");
const BUSY = containerId(1);
const IDLE = containerId(2);
const NOPID = containerId(3);
const STOPPED = containerId(4);

interface Tree {
  docker: string;
  cgroup: string;
  proc: string;
}

async function tree(root: string): Promise<Tree> {
  const t = { docker: join(root, "docker"), cgroup: join(root, "cgroup"), proc: join(root, "proc") };
  await writeConfig(t.docker, BUSY, labels("api"), { pid: 101 });
  await writeConfig(t.docker, IDLE, labels("api"), { pid: 102 });
  await writeConfig(t.docker, NOPID, labels("web"), { pid: 0 });
  await writeConfig(t.docker, STOPPED, labels("worker"), { running: false, restartCount: 2 });
  await writeConfig(t.docker, containerId(5), { "other": "label" }, { pid: 105 });
  for (const [id, cpu] of [[BUSY, 1e9], [IDLE, 1e9], [NOPID, 0]] as const) {
    await writeCgroupV1(t.cgroup, `docker/${id}`, {
      cpuNs: cpu,
      usage: 5_000_000,
      inactiveFile: 1_000_000,
      read: 0,
      write: 0,
    });
  }
  await writePidNet(t.proc, 101, 1000, 2000);
  await writePidNet(t.proc, 102, 1000, 2000);
  await writeMachineProc(t.proc, {
    busy: 1000,
    idle: 1000,
    memTotalKb: 1000,
    memAvailableKb: 400,
    rx: 100,
    tx: 100,
    load1: 0.5,
  });
  return t;
}

Deno.test("two rounds: cores from CPU ns over the interval, memory, net and I/O deltas, first round gaps", async () => {
  await using dir = await tempDir();
  const t = await tree(dir.path);
  const sampler = new Sampler({ dockerRoot: t.docker, cgroupRoot: t.cgroup, procRoot: t.proc });
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
  await writeCgroupV1(t.cgroup, `docker/${BUSY}`, {
    cpuNs: 10e9,
    usage: 9_000_000,
    inactiveFile: 1_000_000,
    read: 4096,
    write: 1024,
  });
  await writePidNet(t.proc, 101, 1500, 2600);
  await writeMachineProc(t.proc, {
    busy: 2500,
    idle: 1500,
    memTotalKb: 1000,
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
  const sampler = new Sampler({ dockerRoot: t.docker, cgroupRoot: t.cgroup, procRoot: t.proc });
  sampler.sample(T);
  sampler.sample(T + 10_000);

  await Deno.remove(join(t.docker, "containers", IDLE), { recursive: true });
  await Deno.writeTextFile(join(t.docker, "containers", NOPID, "config.v2.json"), "{ half a fi");
  await Deno.remove(join(t.cgroup, "memory", `docker/${BUSY}`, "memory.usage_in_bytes"));
  // The stopped worker died of OOM and Docker started it again.
  await writeConfig(t.docker, STOPPED, labels("worker"), {
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
