// Global catch-up, end to end on a real lab: a Project with a Global Service runs on m1 and m2; `ployz machine
// add` of m3 through m1 places the Global Service on m3 (its image, which only m1 holds, copied over the mesh
// first), leaves the replicated Service where it runs, and says what it did; adding m3 again finds nothing to do.
import assert from "node:assert/strict";
import { join } from "node:path";
import { startLab } from "./support/lab.ts";
import { eventually } from "./support/poll.ts";
import { IMAGE } from "./support/docker.ts";
import { needs } from "./support/needs.ts";

const ONLY_M1 = "ployz-test/agent-only-m1:1";
interface Listed {
  machines: { "machine_name": string; containers: { project: string; service: string; slot: string }[] }[];
}

Deno.test(needs(["lab"], {
  name: "machine add places the Global Services of the operator's Saved States on the new Machine, once",
  async fn() {
    await using lab = await startLab("cu", 3, { join: 2 });
    const tagged = await lab.docker("m1", ["tag", IMAGE, ONLY_M1]);
    assert.equal(tagged.code, 0, tagged.stderr);
    const path = join(lab.dir, "global.yaml");
    await Deno.writeTextFile(
      path,
      `name: fleet
services:
  agent:
    image: ${ONLY_M1}
    command: ["sleep", "3600"]
    deploy:
      mode: global
    stop_grace_period: 1s
  web:
    image: ${IMAGE}
    command: ["sleep", "3600"]
    deploy:
      replicas: 2
    stop_grace_period: 1s
`,
    );
    const deployed = await lab.on("m1", ["deploy", "-f", path, "-y", "--monitor", "1s"]);
    assert.equal(deployed.code, 0, deployed.stderr + deployed.stdout);

    // The same operator (the lab's Config Store) adds m3 through m1.
    const addM3 = () =>
      lab.on("m1", ["machine", "add", "--socket", join(lab.dir, "m3", "run", "ployz.sock"), "--name", "m3"]);
    const started = Date.now();
    const added = await addM3();
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    assert.equal(added.code, 0, added.stderr + added.stdout);
    assert.match(added.stdout, /Global catch-up of "fleet": placed: 1 container\(s\) placed on "m3"/);
    console.log(`machine add with Global catch-up (1 image copy, 1 container): ${seconds} s`);

    const listed = await eventually(30_000, "m1 lists fleet on m1, m2 and m3", async () => {
      const result = await lab.on("m1", ["ps", "--all-machines", "--json"]);
      const parsed = JSON.parse(result.stdout) as Listed;
      return parsed.machines.length === 3 ? parsed : undefined;
    });
    const placed = listed.machines.flatMap((m) =>
      m.containers.filter((c) => c.project === "fleet").map((c) => `${c.service}/${c.slot}@${m.machine_name}`)
    ).sort();
    // The replicated Service stays where it ran: catch-up never moves or adds replicas.
    assert.deepEqual(placed, ["agent/1@m1", "agent/1@m2", "agent/1@m3", "web/1@m1", "web/2@m2"]);
    const copied = await lab.docker("m3", ["image", "inspect", "--format", "{{.Id}}", ONLY_M1]);
    assert.equal(copied.code, 0, `the image came from a peer: ${copied.stderr}`);

    // A second add of the same Machine is a no-op, and so is its catch-up.
    const again = await addM3();
    assert.equal(again.code, 0, again.stderr + again.stdout);
    assert.match(again.stdout, /Global catch-up of "fleet": nothing: nothing to place on "m3"/);
  },
}));
