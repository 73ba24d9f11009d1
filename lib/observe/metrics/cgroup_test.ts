import assert from "node:assert/strict";
import { join } from "node:path";
import { tempDir } from "../test_support.ts";
import { CgroupReader } from "./cgroup.ts";
import { containerId, writeCgroupV1, writeCgroupV2 } from "./fixtures.ts";

const ID = containerId(1);
const COUNTERS = {
  cpuNs: 5_000_000_000,
  usage: 10_000_000,
  inactiveFile: 2_000_000,
  read: 4096,
  write: 8192,
};
/** What a reader makes of COUNTERS: memory is the usage without the inactive files. */
const READ = { cpuNs: 5_000_000_000, memoryBytes: 8_000_000, ioReadBytes: 4096, ioWriteBytes: 8192 };

Deno.test("cgroup v1 (cgroupfs driver): CPU ns, memory without inactive files, block I/O", async () => {
  await using dir = await tempDir();
  await writeCgroupV1(dir.path, `docker/${ID}`, COUNTERS);
  const reader = new CgroupReader({ cgroupRoot: dir.path, procRoot: join(dir.path, "proc") });
  assert.equal(reader.version, 1);
  assert.deepEqual(reader.read(ID, 42), READ);
});

Deno.test("cgroup v2 (systemd driver and cgroupfs driver paths)", async () => {
  await using dir = await tempDir();
  await writeCgroupV2(dir.path, `system.slice/docker-${ID}.scope`, COUNTERS);
  const other = containerId(2);
  await writeCgroupV2(dir.path, `docker/${other}`, { ...COUNTERS, cpuNs: 7_000_000 });
  const reader = new CgroupReader({ cgroupRoot: dir.path });
  assert.equal(reader.version, 2);
  assert.deepEqual(reader.read(ID, 0), READ);
  assert.equal(reader.read(other, 0).cpuNs, 7_000_000);
});

Deno.test("an unreadable or malformed cgroup file is a named gap, never zero", async () => {
  await using dir = await tempDir();
  await writeCgroupV1(dir.path, `docker/${ID}`, COUNTERS);
  await Deno.remove(join(dir.path, "memory", `docker/${ID}`, "memory.stat"));
  await Deno.writeTextFile(join(dir.path, "cpuacct", `docker/${ID}`, "cpuacct.usage"), "garbage\n");
  const reader = new CgroupReader({ cgroupRoot: dir.path });
  const read = reader.read(ID, 1);
  assert.deepEqual(read.cpuNs, { gap: "cgroup_file_unreadable" });
  assert.deepEqual(read.memoryBytes, { gap: "cgroup_file_unreadable" });
  assert.equal(read.ioReadBytes, 4096);

  const v2 = join(dir.path, "v2");
  await writeCgroupV2(v2, `docker/${ID}`, COUNTERS);
  await Deno.remove(join(v2, `docker/${ID}`, "io.stat"));
  const r2 = new CgroupReader({ cgroupRoot: v2 }).read(ID, 1);
  assert.deepEqual(r2.ioWriteBytes, { gap: "cgroup_file_unreadable" });
  assert.equal(r2.cpuNs, 5_000_000_000);
});

Deno.test("a custom cgroup parent is found through /proc/<pid>/cgroup; no cgroup at all is cgroup_not_found", async () => {
  await using dir = await tempDir();
  const proc = join(dir.path, "proc");
  await writeCgroupV1(dir.path, `custom/parent/${ID}`, COUNTERS);
  await Deno.mkdir(join(proc, "77"), { recursive: true });
  await Deno.writeTextFile(
    join(proc, "77", "cgroup"),
    `9:name=systemd:/custom/parent/${ID}\n4:memory:/custom/parent/${ID}\n2:cpuacct:/custom/parent/${ID}\n0::/\n`,
  );
  const reader = new CgroupReader({ cgroupRoot: dir.path, procRoot: proc });
  assert.equal(reader.read(ID, 77).cpuNs, 5_000_000_000);
  assert.deepEqual(reader.read(containerId(9), 0), {
    cpuNs: { gap: "cgroup_not_found" },
    memoryBytes: { gap: "cgroup_not_found" },
    ioReadBytes: { gap: "cgroup_not_found" },
    ioWriteBytes: { gap: "cgroup_not_found" },
  });
});
