// Global catch-up, end to end on a real lab: a Project with a Global Service runs on m1 and m2; `ployz machine
// add` of m3 through m1 places the Global Service on m3 (its image, which only m1 holds, copied over the mesh
// first), leaves the replicated Service where it runs, and says what it did; adding m3 again finds nothing to do.
// A second Global Service comes from a real registry (Debian's docker-registry, plain, in the lab's underlay): its
// tag is moved in the registry after the Deploy, and m3 still pulls the digest the Deploy pinned.
import assert from "node:assert/strict";
import { join } from "node:path";
import { type Lab, startLab } from "./support/lab.ts";
import { eventually } from "./support/poll.ts";
import { IMAGE } from "./support/docker.ts";
import { needs } from "./support/needs.ts";
import { startRegistry } from "./support/registry.ts";
import { run } from "./support/spawn.ts";

const ONLY_M1 = "ployz-test/agent-only-m1:1";
interface Listed {
  machines: {
    "machine_name": string;
    containers: { project: string; service: string; slot: string; image: string }[];
  }[];
}

/** `IMAGE` with `label` changed, committed on m1 as `ref`, pushed to a registry without login; its digest. */
async function pushed(lab: Lab, ref: string, label: string): Promise<string> {
  const box = `box-${crypto.randomUUID().slice(0, 8)}`;
  for (
    const args of [["create", "--name", box, IMAGE, "true"], [
      "commit",
      "--change",
      `LABEL v=${label}`,
      box,
      ref,
    ]]
  ) {
    const done = await lab.docker("m1", args);
    assert.equal(done.code, 0, `docker ${args.join(" ")}: ${done.stderr}`);
  }
  await lab.docker("m1", ["rm", box]);
  const config = join(lab.dir, "docker-config");
  await Deno.mkdir(config, { recursive: true });
  const push = await run("docker", ["-H", `unix://${join(lab.dir, "m1", "docker.sock")}`, "push", ref], {
    DOCKER_CONFIG: config,
  });
  assert.equal(push.code, 0, push.stderr);
  const digest = push.stdout.match(/digest: (sha256:[a-f0-9]{64})/)?.[1];
  assert.ok(digest !== undefined, push.stdout);
  // m1 pulls it like the others: it keeps no registry name for it.
  await lab.docker("m1", ["rmi", ref]);
  return digest;
}

Deno.test(needs(["lab", "command:docker-registry"], {
  name: "machine add places the Global Services of the operator's Saved States on the new Machine, once",
  async fn() {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const registryHost = `192.0.2.1:${port}`;
    await using lab = await startLab("cu", 3, { join: 2, upArgs: ["--insecure-registry", registryHost] });
    await using _registry = await startRegistry({
      address: "192.0.2.1",
      port,
      namespace: `${lab.name}-u`,
    });
    const relay = `${registryHost}/fleet/relay:1`;
    const pinned = await pushed(lab, relay, "deployed");
    const tagged = await lab.docker("m1", ["tag", IMAGE, ONLY_M1]);
    assert.equal(tagged.code, 0, tagged.stderr);
    await lab.deploy(
      "m1",
      "global.yaml",
      `name: fleet
services:
  agent:
    image: ${ONLY_M1}
    command: ["sleep", "3600"]
    deploy:
      mode: global
    stop_grace_period: 1s
  relay:
    image: ${relay}
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
    // The tag moves in the registry after the Deploy: m3 must still run the digest the Deploy pinned.
    const moved = await pushed(lab, relay, "moved");
    assert.notEqual(moved, pinned);

    // The same operator (the lab's Config Store) adds m3 through m1.
    const addM3 = () =>
      lab.on("m1", ["machine", "add", "--socket", join(lab.dir, "m3", "run", "ployz.sock"), "--name", "m3"]);
    const started = Date.now();
    const added = await addM3();
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    assert.equal(added.code, 0, added.stderr + added.stdout);
    assert.match(added.stdout, /Global catch-up of "fleet": placed: 2 container\(s\) placed on "m3"/);
    console.log(`machine add with Global catch-up (1 image copy, 1 pull, 2 containers): ${seconds} s`);

    const listed = await eventually(30_000, "m1 lists fleet on m1, m2 and m3", async () => {
      const result = await lab.on("m1", ["ps", "--all-machines", "--json"]);
      const parsed = JSON.parse(result.stdout) as Listed;
      return parsed.machines.length === 3 ? parsed : undefined;
    });
    const placed = listed.machines.flatMap((m) =>
      m.containers.filter((c) => c.project === "fleet").map((c) => `${c.service}/${c.slot}@${m.machine_name}`)
    ).sort();
    // The replicated Service stays where it ran: catch-up never moves or adds replicas.
    assert.deepEqual(placed, [
      "agent/1@m1",
      "agent/1@m2",
      "agent/1@m3",
      "relay/1@m1",
      "relay/1@m2",
      "relay/1@m3",
      "web/1@m1",
      "web/2@m2",
    ]);
    const copied = await lab.docker("m3", ["image", "inspect", "--format", "{{.Id}}", ONLY_M1]);
    assert.equal(copied.code, 0, `the image came from a peer: ${copied.stderr}`);
    const relays = listed.machines.flatMap((m) =>
      m.containers.filter((c) => c.service === "relay").map((c) => `${m.machine_name} ${c.image}`)
    ).sort();
    assert.deepEqual(relays, ["m1", "m2", "m3"].map((m) => `${m} ${relay}@${pinned}`));
    const other = await lab.docker("m3", ["image", "inspect", `${registryHost}/fleet/relay@${moved}`]);
    assert.notEqual(other.code, 0, "m3 never pulled what the moved tag points to");
    const pulled = await lab.docker("m3", ["image", "inspect", `${registryHost}/fleet/relay@${pinned}`]);
    assert.equal(pulled.code, 0, `m3 pulled the pinned digest from the registry: ${pulled.stderr}`);

    // A second add of the same Machine is a no-op, and so is its catch-up.
    const again = await addM3();
    assert.equal(again.code, 0, again.stderr + again.stdout);
    assert.match(again.stdout, /Global catch-up of "fleet": nothing: nothing to place on "m3"/);
  },
}));
