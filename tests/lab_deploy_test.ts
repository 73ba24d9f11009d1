// A Deploy across Machines, end to end, as root on a real three-Machine lab (real dockerd, wireguard-go, ployzd per
// Machine), with the CLI attached to m1 only: a 3-replica Service spreads one container per Machine, a Global
// Service runs on every Machine, `x-machines` pins a Service; an image only m1 holds is copied to m2 and m3 over
// the mesh before their containers are created; a Machine cut off mid-deploy leaves an Outcome that keeps the
// completed prefix, names the failed operation and the operations never attempted; after the heal, the same
// Deploy again finishes what was left; split 2|1, each side deploys its own Project and lists its own view, and
// after the heal both sides list everything.
import assert from "node:assert/strict";
import { join } from "node:path";
import { followDeploy, lastOutcome } from "./support/daemon.ts";
import { machinesUp, startLab } from "./support/lab.ts";
import { eventually } from "./support/poll.ts";
import { IMAGE } from "./support/docker.ts";
import { needs } from "./support/needs.ts";

const ONLY_M1 = "ployz-test/only-m1:1";
interface Listed {
  machines: { machine_name: string; containers: { project: string; service: string; slot: string }[] }[];
  failures: unknown[];
}

interface OutcomeJson {
  status: string;
  completed: { kind: string; machine_name: string; service: string; slot: string }[];
  failed?: {
    op: { kind: string; "machine_name": string; service: string };
    error: { code: string; message: string };
  };
  "not_attempted": { kind: string; "machine_name": string; service: string }[];
}

function spreadCompose(): string {
  return `name: spread
services:
  web:
    image: ${ONLY_M1}
    command: ["sleep", "3600"]
    deploy:
      replicas: 3
    stop_grace_period: 1s
  agent:
    image: ${IMAGE}
    command: ["sleep", "3600"]
    deploy:
      mode: global
    stop_grace_period: 1s
  pinned:
    image: ${IMAGE}
    command: ["sleep", "3600"]
    x-machines: [m2]
    stop_grace_period: 1s
`;
}

function cutCompose(): string {
  return `name: cut
services:
  web:
    image: ${IMAGE}
    command: ["sleep", "3600"]
    deploy:
      replicas: 3
    stop_grace_period: 1s
  after:
    image: ${IMAGE}
    command: ["sleep", "3600"]
    depends_on: [web]
    x-machines: [m1]
    stop_grace_period: 1s
`;
}

/** Where each Service's slots run, as `service/slot@machine`, sorted. */
function placement(listed: Listed, project: string): string[] {
  return listed.machines.flatMap((m) =>
    m.containers.filter((c) => c.project === project).map((c) => `${c.service}/${c.slot}@${m.machine_name}`)
  ).sort();
}

Deno.test(needs(["lab"], {
  name:
    "Deploy across a 3-Machine lab: spread, global, x-machines, image from a peer, Machine cut mid-deploy",
  async fn(t) {
    await using lab = await startLab("dp", 3);
    await machinesUp(lab, "m1", 3);
    const ps = async (): Promise<Listed> => {
      const result = await lab.on("m1", ["ps", "--all-machines", "--json"]);
      assert.equal(result.code, 0, result.stderr);
      return JSON.parse(result.stdout) as Listed;
    };

    await t.step(
      "spread, global and x-machines land where they should; m1's image reaches m2, m3",
      async () => {
        const tagged = await lab.docker("m1", ["tag", IMAGE, ONLY_M1]);
        assert.equal(tagged.code, 0, tagged.stderr);
        const path = join(lab.dir, "spread.yaml");
        await Deno.writeTextFile(path, spreadCompose());
        const started = Date.now();
        const deployed = await lab.on("m1", ["deploy", "-f", path, "-y", "--monitor", "1s", "--json"]);
        const seconds = ((Date.now() - started) / 1000).toFixed(1);
        assert.equal(deployed.code, 0, deployed.stderr + deployed.stdout);
        const outcome = lastOutcome<OutcomeJson>(deployed.stdout);
        assert.equal(outcome.status, "succeeded");
        const copies = outcome.completed.filter((op) => op.kind === "image").map((op) => op.machine_name)
          .sort();
        assert.deepEqual(copies, ["m2", "m3"], "the image only m1 held was copied to m2 and m3");
        console.log(`3-Machine deploy (7 containers, 2 image copies): ${seconds} s`);
        assert.deepEqual(placement(await ps(), "spread"), [
          "agent/1@m1",
          "agent/1@m2",
          "agent/1@m3",
          "pinned/1@m2",
          "web/1@m1",
          "web/2@m2",
          "web/3@m3",
        ]);
        for (const m of ["m2", "m3"]) {
          const inspected = await lab.docker(m, ["image", "inspect", "--format", "{{.Id}}", ONLY_M1]);
          assert.equal(inspected.code, 0, `${ONLY_M1} is on ${m}: ${inspected.stderr}`);
        }
        // The same Deploy again has nothing to do: every Machine's containers are UpToDate.
        const again = await lab.on("m1", ["deploy", "-f", path, "-y"]);
        assert.equal(again.code, 0, again.stderr);
        assert.match(again.stdout, /Nothing to do: 7 containers up to date/);
      },
    );

    await t.step(
      "a Machine cut off mid-deploy: the Outcome keeps the prefix and names the rest",
      async () => {
        const path = join(lab.dir, "cut.yaml");
        await Deno.writeTextFile(path, cutCompose());
        let cutAt = -1;
        // --parallel 1: this is the plan-order Outcome (a completed prefix, the rest not attempted);
        // lab_parallel_deploy_test cuts a Machine under the default parallel execution.
        const run = await followDeploy(
          { compose: path, flags: ["--monitor", "2s", "--parallel", "1"], env: lab.envOn("m1") },
          async (event) => {
            // While m2's slot is being made, m3 drops off the mesh: the next operation, on m3, cannot run.
            if (cutAt < 0 && event.type === "step" && event.status === "running" && event.index === 1) {
              cutAt = event.index;
              const cut = await lab.lab(["partition", "m1,m2", "/", "m3"]);
              assert.equal(cut.code, 0, cut.stderr);
            }
          },
        );
        assert.equal(run.code, 1, `a partial Deploy exits 1: ${run.stderr}`);
        assert.equal(cutAt, 1, "the partition was made while operation 2 ran");
        const outcome = lastOutcome<OutcomeJson>(run.transcript);
        assert.equal(outcome.status, "partial");
        assert.deepEqual(
          outcome.completed.map((op) => `${op.kind} ${op.service}@${op.machine_name}`),
          ["create web@m1", "create web@m2"],
        );
        assert.equal(outcome.failed?.op.machine_name, "m3");
        assert.equal(outcome.failed?.error.code, "unavailable", outcome.failed?.error.message);
        assert.deepEqual(
          outcome.not_attempted.map((op) => `${op.kind} ${op.service}@${op.machine_name}`),
          ["point web@m3", "create after@m1", "point after@m1"],
        );
        // What completed keeps running: the prefix is not rolled back.
        const seen = placement(await ps(), "cut");
        assert.deepEqual(seen, ["web/1@m1", "web/2@m2"]);
        console.log(`cut mid-deploy: failed on m3 with ${outcome.failed?.error.message}`);

        await lab.lab(["heal"]).then((r) => assert.equal(r.code, 0, r.stderr));
        await eventually(60_000, "m1 sees m3 up again", async () => {
          const listed = JSON.parse((await lab.on("m1", ["machine", "ls", "--json"])).stdout);
          const m3 = (listed.machines as { name: string; membership: string }[]).find((m) => m.name === "m3");
          return m3?.membership === "up" ? true : undefined;
        });
        const redeployed = await lab.on("m1", ["deploy", "-f", path, "-y", "--monitor", "1s", "--json"]);
        assert.equal(redeployed.code, 0, redeployed.stderr + redeployed.stdout);
        const finished = lastOutcome<OutcomeJson>(redeployed.stdout);
        assert.deepEqual(
          finished.completed.map((op) => `${op.kind} ${op.service}@${op.machine_name}`),
          ["create web@m3", "point web@m3", "create after@m1", "point after@m1"],
        );
        assert.deepEqual(placement(await ps(), "cut"), ["after/1@m1", "web/1@m1", "web/2@m2", "web/3@m3"]);
      },
    );

    await t.step("partition 2|1: each side deploys and lists its own view; the heal shows both", async () => {
      await lab.lab(["partition", "m1,m2", "/", "m3"]).then((r) => assert.equal(r.code, 0, r.stderr));
      const side = (name: string, replicas: number): Promise<string> => {
        const path = join(lab.dir, `${name}.yaml`);
        return Deno.writeTextFile(
          path,
          `name: ${name}\nservices:\n  web:\n    image: ${IMAGE}\n    command: ["sleep", "3600"]\n` +
            `    deploy:\n      replicas: ${replicas}\n    stop_grace_period: 1s\n`,
        ).then(() => path);
      };
      // Two operators, one on each side, each with their own Config Store.
      const left = await lab.ployz(["deploy", "-f", await side("left", 2), "-y", "--monitor", "1s"], {
        ...lab.envOn("m1"),
        PLOYZ_CONFIG_DIR: join(lab.dir, "operator-left"),
      });
      assert.equal(left.code, 0, left.stderr + left.stdout);
      assert.match(left.stdout, /Machine "m3" was not observed \(unavailable: Cannot reach Machine "m3"/);
      const right = await lab.ployz(["deploy", "-f", await side("right", 1), "-y", "--monitor", "1s"], {
        ...lab.envOn("m3"),
        PLOYZ_CONFIG_DIR: join(lab.dir, "operator-right"),
      });
      assert.equal(right.code, 0, right.stderr + right.stdout);
      assert.match(right.stdout, /Machine "m1" was not observed/);
      const view = async (m: string): Promise<{ listed: Listed; seen: string[] }> => {
        const result = await lab.on(m, ["ps", "--all-machines", "--json"]);
        assert.equal(result.code, 0, result.stderr);
        const listed = JSON.parse(result.stdout) as Listed;
        return { listed, seen: [...placement(listed, "left"), ...placement(listed, "right")] };
      };
      const fromM1 = await view("m1");
      assert.deepEqual(fromM1.seen, ["web/1@m1", "web/2@m2"]);
      assert.equal(fromM1.listed.failures.length, 1, "m1 names m3 as not answering");
      const fromM3 = await view("m3");
      assert.deepEqual(fromM3.seen, ["web/1@m3"]);
      assert.equal(fromM3.listed.failures.length, 2, "m3 names m1 and m2 as not answering");

      await lab.lab(["heal"]).then((r) => assert.equal(r.code, 0, r.stderr));
      for (const m of ["m1", "m3"]) {
        await eventually(60_000, `${m} sees both sides' containers after the heal`, async () => {
          const { listed, seen } = await view(m);
          const all = ["web/1@m1", "web/1@m3", "web/2@m2"];
          return listed.failures.length === 0 && JSON.stringify(seen.sort()) === JSON.stringify(all)
            ? true
            : undefined;
        });
      }
    });
  },
}));
