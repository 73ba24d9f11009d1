// Machine Labels, acceptance flags and placement constraints, end to end on a real 3-Machine lab: each Machine
// writes its own Labels (seen by the others in `machine ls`), a Deploy places by `deploy.placement.constraints`,
// a constraint holding nowhere is refused naming it, changing a label moves nothing, and each Machine's own
// admission refuses a create its record does not admit, naming the check. Last, `restart` and `stop` keep a
// receipt per leg and a re-run under the same request key sends nothing already done; `cleanup` removes the
// stopped container a failed replacement left and keeps the ones `stop` stopped.
import assert from "node:assert/strict";
import { join } from "node:path";
import { connectMachine, RpcError } from "../lib/rpc/mod.ts";
import { IMAGE } from "./support/docker.ts";
import { machinesUp, startLab } from "./support/lab.ts";
import { needs } from "./support/needs.ts";
import { eventually } from "./support/poll.ts";

interface Listed {
  machines: { "machine_name": string; containers: { project: string; service: string; slot: string }[] }[];
}

function compose(constraint: string): string {
  return `name: geo
services:
  web:
    image: ${IMAGE}
    command: ["sleep", "3600"]
    stop_grace_period: 1s
    deploy:
      replicas: 2
      placement:
        constraints: ["${constraint}"]
`;
}

Deno.test(needs(["lab"], {
  name: "labels and acceptance flags are the Machine's own, placement follows them, admission re-checks them",
  async fn() {
    await using lab = await startLab("pl", 3);
    await machinesUp(lab, "m1", 3);

    // Each Machine writes its own labels, asked through m1; the others see them in their own `machine ls`.
    await lab.on("m1", ["machine", "label", "m1", "region=eu"]).then((r) =>
      assert.equal(r.code, 0, r.stderr)
    );
    const m3 = await lab.on("m1", ["machine", "label", "m3", "region=eu", "disk=ssd"]);
    assert.equal(m3.code, 0, m3.stderr);
    assert.match(m3.stdout, /Machine "m3" \(\w+\): labels disk=ssd,region=eu; workloads on; ingress on/);
    const bad = await lab.on("m1", ["machine", "label", "m2", "re gion=eu"]);
    assert.equal(bad.code, 1, bad.stdout);
    assert.match(bad.stderr, /^error\[invalid_argument\]: invalid label key "re gion"/);
    const badFlag = await lab.on("m1", ["machine", "accept", "m2", "--workloads", "maybe"]);
    assert.match(
      badFlag.stderr,
      /^error\[invalid_argument\]: Invalid --workloads "maybe": expected on or off/,
    );
    await eventually(30_000, "m2 sees m1's and m3's labels", async () => {
      const listed = await lab.on("m2", ["machine", "ls"]);
      const lines = listed.stdout.split("\n");
      const m1 = lines.find((l) => l.startsWith("m1 "));
      const m3Line = lines.find((l) => l.startsWith("m3 "));
      return m1?.includes("region=eu") && m3Line?.includes("disk=ssd,region=eu") ? true : undefined;
    });

    // Placement by label: both replicas on the eu Machines, none on m2.
    const path = join(lab.dir, "geo.yaml");
    await Deno.writeTextFile(path, compose("node.labels.region == eu"));
    const deployed = await lab.on("m1", ["deploy", "-f", path, "-y", "--monitor", "1s"]);
    assert.equal(deployed.code, 0, deployed.stderr + deployed.stdout);
    const placed = async (): Promise<string[]> => {
      const result = await lab.on("m1", ["ps", "--all-machines", "--json"]);
      const parsed = JSON.parse(result.stdout) as Listed;
      return parsed.machines.flatMap((m) =>
        m.containers.filter((c) => c.project === "geo").map((c) => `${c.service}/${c.slot}@${m.machine_name}`)
      ).sort();
    };
    assert.deepEqual(await placed(), ["web/1@m1", "web/2@m3"]);

    // A constraint that holds on no Machine is refused before anything runs, naming it.
    await Deno.writeTextFile(path, compose("node.labels.region == us"));
    const nowhere = await lab.on("m1", ["deploy", "-f", path, "-y"]);
    assert.notEqual(nowhere.code, 0);
    assert.match(
      nowhere.stderr,
      /error\[invalid_argument\]: Service "geo\/web" can run on no observed Machine: "m1": constraint "node.labels.region == us" does not hold \(its label region is "eu"\)/,
    );
    await Deno.writeTextFile(path, compose("node.role == manager"));
    const unsupported = await lab.on("m1", ["deploy", "-f", path, "-y"]);
    assert.match(
      unsupported.stderr,
      /geo\.yaml:10:23: .*unsupported placement constraint "node\.role == manager"/,
    );

    // Changing a label evicts nothing.
    await lab.on("m1", ["machine", "label", "m3", "--rm", "region"]).then((r) =>
      assert.equal(r.code, 0, r.stderr)
    );
    assert.deepEqual(await placed(), ["web/1@m1", "web/2@m3"]);

    // Each Machine's own admission refuses a new container its record does not admit, naming the check.
    const accept = await lab.on("m1", ["machine", "accept", "m2", "--workloads", "off"]);
    assert.equal(accept.code, 0, accept.stderr);
    assert.match(accept.stdout, /workloads off; ingress on/);
    const listed = await lab.on("m1", ["machine", "ls"]);
    assert.match(listed.stdout.split("\n").find((l) => l.startsWith("m2 ")) ?? "", /-,ingress$/);
    const spec = (name: string, placement?: { constraints: string[] }) => ({
      spec: {
        name,
        creationKey: crypto.randomUUID(),
        project: "geo",
        service: "web",
        deployment: "d".repeat(32),
        slot: "9",
        image: IMAGE,
        ...(placement === undefined ? {} : { placement }),
      },
      start: false,
    });
    const refusal = async (m: string, request: ReturnType<typeof spec>): Promise<string> => {
      const client = connectMachine({ socketPath: join(lab.dir, m, "run", "ployz.sock") });
      try {
        await client.ensureContainer(request);
        return "created";
      } catch (error) {
        assert.ok(error instanceof RpcError, String(error));
        return `${error.code} ${error.details.check}: ${error.message}`;
      } finally {
        client.close();
      }
    };
    assert.match(
      await refusal("m2", spec("geo-web-9-drained")),
      /^conflict accepts_workloads: Machine "m2" refuses to create "geo-web-9-drained": it does not accept workloads/,
    );
    assert.match(
      await refusal("m3", spec("geo-web-9-placed", { constraints: ["node.labels.region == eu"] })),
      /^conflict placement: Machine "m3" refuses .*constraint "node.labels.region == eu" does not hold \(its label region is unset\)/,
    );
    // With m2 refusing workloads and m3 no longer eu, a replicated Service without constraints goes to m1 and m3.
    await Deno.writeTextFile(path, compose("node.hostname != m9").replace("geo", "spread"));
    const spread = await lab.on("m1", ["deploy", "-f", path, "-y", "--monitor", "1s"]);
    assert.equal(spread.code, 0, spread.stderr + spread.stdout);
    const result = JSON.parse((await lab.on("m1", ["ps", "--all-machines", "--json"])).stdout) as Listed;
    const spreadOn = result.machines.flatMap((m) =>
      m.containers.filter((c) => c.project === "spread").map(() => m.machine_name)
    ).sort();
    assert.deepEqual(spreadOn, ["m1", "m3"]);

    // restart keeps a receipt per slot too: the same request key again restarts no slot already restarted.
    const restart = await lab.on("m1", [
      "restart",
      "geo/web",
      "--monitor",
      "1s",
      "--request-key",
      "restart-geo",
    ]);
    assert.equal(restart.code, 0, restart.stderr + restart.stdout);
    assert.equal(restart.stdout.match(/^Restarted geo-web-/gm)?.length, 2, restart.stdout);
    const restartAgain = await lab.on("m1", ["restart", "geo/web", "--request-key", "restart-geo"]);
    assert.equal(restartAgain.code, 0, restartAgain.stderr + restartAgain.stdout);
    assert.equal(restartAgain.stdout.match(/^Already restarted geo-web-/gm)?.length, 2, restartAgain.stdout);

    // stop is a bounded command with a receipt per leg: the same request key again sends no leg already done.
    const stop = await lab.on("m1", ["stop", "geo/web", "--request-key", "stop-geo"]);
    assert.equal(stop.code, 0, stop.stderr + stop.stdout);
    const legs = (JSON.parse((await lab.on("m1", ["receipts", "stop-geo", "--json"])).stdout).receipts as {
      leg: string;
      receipt: { status: string };
    }[]).map((r) => `${r.leg.replace(/-\w+@/, "@")}: ${r.receipt.status}`).sort();
    assert.deepEqual(legs, ["stop geo-web-1@m1: succeeded", "stop geo-web-2@m3: succeeded"]);
    const again = await lab.on("m1", ["stop", "geo/web", "--request-key", "stop-geo"]);
    assert.equal(again.code, 0, again.stderr + again.stdout);
    assert.equal(again.stdout.match(/by an earlier run of this request/g)?.length, 2, again.stdout);

    // cleanup: a failed replacement leaves its new container stopped as evidence, of a Deployment that is not the
    // Serving Pointer's; cleanup removes it and keeps geo's containers that `stop` stopped (the current Deployment).
    // No restart policy: whatever the 1 s gate saw on a loaded host, a container left behind is exited, never
    // crash-looping between states that cleanup rightly leaves alone.
    await Deno.writeTextFile(
      path,
      compose("node.hostname != m9").replace("geo", "spread").replace(
        '["sleep", "3600"]',
        '["false"]\n    restart: "no"',
      ),
    );
    const broken = await lab.on("m1", ["deploy", "-f", path, "-y", "--monitor", "1s"]);
    assert.notEqual(broken.code, 0, broken.stdout);
    // Each not-running container of `project`, as `name@machine state`.
    const notRunning = async (project: string): Promise<string[]> => {
      const listed = JSON.parse((await lab.on("m1", ["ps", "--all-machines", "--json"])).stdout) as {
        machines: {
          "machine_name": string;
          containers: { project: string; name: string; state: string }[];
        }[];
      };
      return listed.machines.flatMap((m) =>
        m.containers.filter((c) => c.project === project && c.state !== "running").map((c) =>
          `${c.name}@${m.machine_name} ${c.state}`
        )
      );
    };
    const stopped = async (project: string): Promise<number> => (await notRunning(project)).length;
    const left = await notRunning("spread");
    const evidence = left.length;
    assert.ok(evidence >= 1, "the failed replacement left a stopped container");
    const preview = await lab.on("m1", ["cleanup", "--dry-run"]);
    assert.equal(preview.code, 0, preview.stderr + preview.stdout);
    assert.equal(
      preview.stdout.match(/spread-web-\d+-/g)?.length,
      evidence,
      `${preview.stdout}\nnot running: ${
        left.join(", ")
      }\nthe failed Deploy said:\n${broken.stdout}${broken.stderr}`,
    );
    assert.doesNotMatch(preview.stdout, /geo-web-/);
    const cleaned = await lab.on("m1", ["cleanup", "-y", "--request-key", "cleanup-1"]);
    assert.equal(cleaned.code, 0, cleaned.stderr + cleaned.stdout);
    const removed = [...cleaned.stdout.matchAll(/removed (\d+) container/g)].reduce(
      (n, m) => n + Number(m[1]),
      0,
    );
    assert.equal(removed, evidence, cleaned.stdout);
    assert.equal(await stopped("spread"), 0);
    assert.equal(await stopped("geo"), 2, "stopped containers of the current Deployment are kept");
    const cleanupLegs = JSON.parse((await lab.on("m1", ["receipts", "cleanup-1", "--json"])).stdout)
      .receipts as {
        leg: string;
        receipt: { status: string };
      }[];
    assert.equal(cleanupLegs.filter((r) => r.leg.startsWith("prune images@")).length, 3);
    assert.ok(cleanupLegs.every((r) => r.receipt.status === "succeeded"), JSON.stringify(cleanupLegs));
  },
}));
