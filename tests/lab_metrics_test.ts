// Metrics in the lab are real figures: a lab Machine's Observe Store sees the host's /proc and cgroups through the
// same read-only observe host view an installed Machine's ployz-observe unit has, so `ployz top` shows CPU,
// memory, network and disk numbers for a busy container, never `gap: not_permitted`.
import assert from "node:assert/strict";
import { startLab } from "./support/lab.ts";
import { eventually } from "./support/poll.ts";
import { needs } from "./support/needs.ts";

const IMAGE = "ployz-test/busybox:1";
type Value = { avg: number } | { sum: number } | { gap: string };

interface TopJson {
  machines: {
    "machine_name": string;
    services: { project: string; service: string; values: Record<string, Value> | null }[];
    machine: { values: Record<string, Value> | null };
  }[];
}

function numberOf(value: Value | undefined): number | undefined {
  if (value === undefined || "gap" in value) return undefined;
  return "avg" in value ? value.avg : value.sum;
}

Deno.test(needs(["lab"], {
  name: "ployz top on a lab Machine shows real CPU, memory, network and disk figures for a busy container",
  async fn() {
    await using lab = await startLab("mt", 1);
    // Busy in a bounded way: a short CPU burst every second, so the sampler sees CPU time grow.
    await lab.deploy(
      "m1",
      "busy.yaml",
      `name: busy
services:
  spin:
    image: ${IMAGE}
    command: ["sh", "-c", "while :; do seq 1 50000 > /dev/null; sleep 1; done"]
    stop_signal: SIGKILL
`,
      [],
    );
    let last = "";
    const values = await eventually(90_000, "a sample with numbers for busy/spin", async () => {
      const top = await lab.on("m1", ["top", "--json"]);
      last = top.stdout + top.stderr;
      if (top.code !== 0) return undefined;
      const spin = (JSON.parse(top.stdout) as TopJson).machines[0]?.services
        .find((s) => s.project === "busy" && s.service === "spin");
      const cpu = numberOf(spin?.values?.cpu);
      return cpu !== undefined && cpu > 0 ? spin!.values! : undefined;
    }).catch((error) => {
      throw new Error(`${error instanceof Error ? error.message : error}; last ployz top: ${last}`);
    });
    for (const metric of ["cpu", "memory", "net_rx", "net_tx", "disk_read", "disk_write"]) {
      const n = numberOf(values[metric]);
      assert.ok(n !== undefined && n >= 0, `${metric} is a number, not ${JSON.stringify(values[metric])}`);
    }
    assert.ok(numberOf(values.memory)! > 0, "memory in use is above zero");
    const table = await lab.on("m1", ["top"]);
    assert.equal(table.code, 0, table.stderr);
    assert.doesNotMatch(table.stdout, /not_permitted/, table.stdout);
  },
}));
