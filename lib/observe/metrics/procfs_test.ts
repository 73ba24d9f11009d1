import assert from "node:assert/strict";
import { netDev } from "./fixtures.ts";
import { machineCores, parseLoadavg, parseMeminfo, parseNetDev, parseProcStat } from "./procfs.ts";

Deno.test("net/dev sums interfaces but loopback; the Machine's leaves out container links and bridges", () => {
  const text = netDev(1000, 2000, [
    "  veth9: 500  1 0 0 0 0 0 0 700  1 0 0 0 0 0 0",
    "docker0: 300  1 0 0 0 0 0 0 300  1 0 0 0 0 0 0",
    "  wg0: 10  1 0 0 0 0 0 0 20  1 0 0 0 0 0 0",
  ]);
  assert.deepEqual(parseNetDev(text), { rx: 1810, tx: 3020 });
  assert.deepEqual(parseNetDev(text, true), { rx: 1010, tx: 2020 });
  assert.equal(parseNetDev("nonsense"), undefined);
  assert.equal(parseNetDev(netDev(1, 2, ["  eth1: 12 3"])), undefined);
});

Deno.test("/proc/stat, meminfo and loadavg parse; Machine CPU is busy share × CPUs", () => {
  const a = parseProcStat("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1\ncpu1 1\n")!;
  assert.deepEqual(a, { busy: 150, total: 1000, cpus: 2 });
  const b = parseProcStat("cpu  200 0 100 1600 100 0 0 0 0 0\ncpu0 1\ncpu1 1\n")!;
  assert.equal(machineCores(a, b), 0.3);
  assert.equal(machineCores(b, a), undefined);
  assert.equal(parseProcStat("intr 1\n"), undefined);
  assert.equal(parseMeminfo("MemTotal:  1000 kB\nMemAvailable:  250 kB\n"), 750 * 1024);
  assert.equal(parseMeminfo("MemTotal:  1000 kB\n"), undefined);
  assert.equal(parseLoadavg("2.51 2.75 1.74 2/218 13776\n"), 2.51);
  assert.equal(parseLoadavg(""), undefined);
});
