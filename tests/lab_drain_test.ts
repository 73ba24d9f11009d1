// Drain on a real 3-Machine lab with real Caddy on each Machine: draining the last Machine that accepts workloads
// is refused; with all 6 slots of a served Service on m2, `ployz machine drain m2` moves them to m1 and m3
// (start-first, health-gated) under a request loop through every Ingress Proxy, keeps the Global Service's slot on
// m2 and says so, ends with a report and a receipt per leg; `machine undrain` lets m2 take new work again.
import assert from "node:assert/strict";
import { buildCaddyImage } from "./support/caddy.ts";
import { DOCKER_SOCKET, IMAGE } from "./support/docker.ts";
import { labLoad, machinesUp, startLab } from "./support/lab.ts";
import { needs } from "./support/needs.ts";
import { eventually, sleep } from "./support/poll.ts";
import { webService } from "./support/web_service.ts";

const HOST = "drain.test";
const COMPOSE = "name: shop\nservices:\n" +
  webService({ name: "web", index: "$$HOSTNAME", deploy: "{replicas: 6}", ports: [`${HOST}:80/http`] }) +
  `  agent:
    image: ${IMAGE}
    command: ["sleep", "3600"]
    stop_grace_period: 1s
    deploy: {mode: global}
`;

interface Listed {
  machines: { "machine_name": string; containers: { project: string; service: string; slot: string }[] }[];
}

Deno.test(needs(["lab"], {
  name:
    "machine drain moves a Machine's replicated slots elsewhere under load, keeps its Global slot, and ends",
  async fn() {
    await buildCaddyImage(DOCKER_SOCKET);
    await using lab = await startLab("dr", 3, {
      upArgs: ["--image", IMAGE, "--image", "ployz-system/caddy:2"],
    });
    await machinesUp(lab, "m1", 3);
    const accept = async (m: string, on: "on" | "off"): Promise<void> => {
      const r = await lab.on("m1", ["machine", "accept", m, "--workloads", on]);
      assert.equal(r.code, 0, r.stderr);
    };

    // Nowhere to go: with m1 and m3 refusing workloads, draining m2 is refused and changes nothing.
    await accept("m1", "off");
    await accept("m3", "off");
    const refused = await lab.on("m1", ["machine", "drain", "m2"]);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /^error\[conflict\]: Refusing to drain Machine "m2": no other Machine .*--force/,
    );
    const still = await lab.on("m1", ["machine", "ls"]);
    assert.match(still.stdout.split("\n").find((l) => l.startsWith("m2 ")) ?? "", /workloads,ingress$/);

    // So the Deploy puts all 6 slots on m2; then m1 and m3 take workloads again.
    await lab.deploy("m1", "shop.yaml", COMPOSE);
    await accept("m1", "on");
    await accept("m3", "on");
    const placed = async (): Promise<string[]> => {
      const parsed = JSON.parse((await lab.on("m1", ["ps", "--all-machines", "--json"])).stdout) as Listed;
      return parsed.machines.flatMap((m) =>
        m.containers.filter((c) => c.project === "shop").map((c) => `${c.service}@${m.machine_name}`)
      ).sort();
    };
    const count = (list: string[], what: string): number => list.filter((x) => x === what).length;
    const before = await placed();
    assert.deepEqual(before, ["agent@m2", ...Array(6).fill("web@m2")], before.join(" "));
    for (const m of ["m1", "m2", "m3"]) {
      await eventually(60_000, `${m}'s Ingress Proxy serves ${HOST}`, async () => {
        const r = await lab.ployz([
          "lab",
          "exec",
          m,
          "--dir",
          lab.dir,
          "--",
          "curl",
          "-s",
          "-m",
          "2",
          "-H",
          `Host: ${HOST}`,
          "http://127.0.0.1/",
        ]);
        return r.code === 0 && r.stdout.trim() !== "" ? true : undefined;
      });
    }

    // The Drain, under a request loop through every Machine's Ingress Proxy.
    const load = labLoad(lab.dir, ["m1", "m2", "m3"], HOST);
    await sleep(1_000);
    const started = Date.now();
    const drained = await lab.on("m1", ["machine", "drain", "m2", "--monitor", "1s", "--json"]);
    const seconds = (Date.now() - started) / 1000;
    await sleep(1_000);
    const figures = await load.stop();
    const served = figures.reduce((n, f) => n + f.served, 0);
    const failures = figures.flatMap((f) => f.failures.map((line) => `${f.machine}: ${line}`));
    assert.equal(drained.code, 0, drained.stderr + drained.stdout);
    const report = JSON.parse(drained.stdout.trim().split("\n").at(-1)!);
    assert.equal(report.type, "drain");
    assert.deepEqual(report.projects, [{ project: "shop", status: "succeeded" }]);
    assert.deepEqual(report.kept, ["shop/agent"]);
    // m2's Pool was read (a lab Machine has none here): no Provisioned Volume is left behind, and none is unknown.
    assert.deepEqual(report.volumes, []);
    assert.equal(report.volumesUnknown, undefined, report.volumesUnknown);
    const receipts = await lab.on("m1", ["receipts", report.request_key, "--json"]);
    assert.deepEqual(
      (JSON.parse(receipts.stdout).receipts as { leg: string; receipt: { status: string } }[])
        .map((r) => `${r.leg}: ${r.receipt.status}`),
      ["accept: succeeded", "deploy shop: succeeded"],
    );
    console.log(
      `drain of m2 holding 6 web slots (+1 Global): ${seconds.toFixed(1)} s to done; ` +
        `${failures.length} of ${served + failures.length} requests failed${
          failures.length > 0 ? ` (${failures.slice(0, 5).join(", ")})` : ""
        }`,
    );
    assert.deepEqual(failures, [], "no request failed during the Drain");
    assert.ok(served >= 30, `only ${served} requests served`);

    const after = await placed();
    assert.equal(count(after, "web@m2"), 0, after.join(" "));
    assert.equal(count(after, "web@m1") + count(after, "web@m3"), 6, after.join(" "));
    // m2's Global slot stays; the Deploy also placed the Global Service on m1 and m3, which accept workloads again.
    assert.deepEqual(after.filter((x) => x.startsWith("agent")), ["agent@m1", "agent@m2", "agent@m3"]);
    const listed = await lab.on("m1", ["machine", "ls"]);
    assert.match(listed.stdout.split("\n").find((l) => l.startsWith("m2 ")) ?? "", /-,ingress$/);

    // A second Drain has nothing left to move; undrain lets m2 take new work again.
    const again = await lab.on("m1", ["machine", "drain", "m2"]);
    assert.equal(again.code, 0, again.stderr + again.stdout);
    assert.match(again.stdout, /shop: unchanged/);
    assert.match(again.stdout, /kept: Global Service shop\/agent stays on "m2"/);
    const undrained = await lab.on("m1", ["machine", "undrain", "m2"]);
    assert.equal(undrained.code, 0, undrained.stderr);
    assert.match(undrained.stdout, /workloads on/);
  },
}));
