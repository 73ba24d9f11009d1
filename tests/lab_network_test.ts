// A Cluster founded on another private network than the default (`lab up --network 10.217.0.0/16`, as
// `machine init --subnet 10.217.0.0/24` would): `machine add` allocates in it, ployzd serve syncs with its peer at
// 10.217.x.1:51000 under the relocated serve set, ployzd dns answers containers there under the dns set, and
// containers reach each other's by name with their own addresses (forwarded, never masqueraded). A subnet outside
// the private ranges is refused by `machine init` before anything is founded.
import assert from "node:assert/strict";
import { join } from "node:path";
import { type Lab, machinesUp, type ProjectReplica, projectReplicas, startLab } from "./support/lab.ts";
import { eventually } from "./support/poll.ts";
import { run } from "./support/spawn.ts";
import { needs } from "./support/needs.ts";
import { whoProject } from "./support/web_service.ts";

const NETWORK = "10.217.0.0/16";
const MACHINES = ["m1", "m2"];

/** A busybox httpd per Machine whose CGI answers `<service> <caller address>`. */
function compose(): string {
  return whoProject("lnet", MACHINES);
}

/** Each Machine's one lnet container: its id and its address on the `ployz` network. */
function replicas(lab: Lab): Promise<ProjectReplica[]> {
  return projectReplicas(lab, MACHINES, "lnet");
}

/** What each container got asking the other by name, as `<from> -> <answer>` lines. */
async function crossAnswers(lab: Lab): Promise<string[]> {
  const all = await replicas(lab);
  return await Promise.all(all.map(async (from) => {
    const to = all.find((r) => r !== from)!;
    const url = `http://w${to.machine.slice(1)}.lnet.internal/cgi-bin/who`;
    const socket = `unix://${join(lab.dir, from.machine, "docker.sock")}`;
    // Bounded from outside: busybox wget's own -T crashes in the test image.
    const r = await run("timeout", [
      "-s",
      "KILL",
      "8",
      "docker",
      "-H",
      socket,
      "exec",
      from.container,
      "wget",
      "-q",
      "-O-",
      url,
    ]);
    const answer = r.stdout.trim().replace(/\[?(::ffff:)?([\d.]+)\]?$/, "$2");
    return `${from.address} -> ${r.code === 0 ? answer : `failed (${r.code}): ${r.stderr.trim()}`}`;
  }));
}

Deno.test(needs(["lab"], {
  name:
    `a Cluster on ${NETWORK}: Machines sync, containers resolve and reach each other with their own addresses`,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    // m3 stays uninitialized: the refusal of a subnet no permission set reaches is tried there.
    await using lab = await startLab("lnet", 3, { join: 2, upArgs: ["--network", NETWORK] });
    // Both Machines up on both sides: their rows crossed 10.217.x.1:51000 each way.
    await machinesUp(lab, "m1", 2);
    await machinesUp(lab, "m2", 2);
    const listed = JSON.parse(
      (await lab.ok(["machine", "ls", "--json"], { PLOYZ_RUN_DIR: join(lab.dir, "m2", "run") })).stdout,
    );
    assert.deepEqual(
      (listed.machines as { subnet: string }[]).map((m) => m.subnet).sort(),
      ["10.217.0.0/24", "10.217.1.0/24"],
    );

    await lab.deploy("m1", "lnet.json", compose());

    let last: string[] = [];
    await eventually(60_000, "each container reaching the other by name", async () => {
      const all = await replicas(lab).catch(() => []);
      last = await crossAnswers(lab).catch((error) => [String(error)]);
      const want = all.map((from) => {
        const to = all.find((r) => r !== from)!;
        return `${from.address} -> w${to.machine.slice(1)} ${from.address}`;
      });
      return all.length === 2 && JSON.stringify(last) === JSON.stringify(want) ? true : undefined;
    }, 1000).catch((error) => {
      throw new Error(`${error}\n${last.join("\n")}`);
    });
    for (const line of last) assert.match(line, /^10\.217\.\d+\.\d+ -> w\d 10\.217\./);
    console.log(last.join("\n"));

    // A public subnet is refused up front, with the value and the allowed ranges, and nothing is founded.
    const refused = await lab.on("m3", ["machine", "init", "--subnet", "203.0.113.0/24"]);
    assert.equal(refused.code, 1, refused.stdout);
    assert.equal(
      refused.stderr.trim(),
      'error[invalid_argument]: Invalid subnet "203.0.113.0/24": a Machine subnet must lie in a private range ' +
        "(10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16)",
    );
    const m3 = JSON.parse(
      (await lab.ok(["machine", "ls", "--json"], { PLOYZ_RUN_DIR: join(lab.dir, "m3", "run") })).stdout,
    );
    assert.equal(m3.machines.length, 0, "m3 founded nothing");
    assert.match(m3.mesh_error, /not in a Cluster/);
  },
}));
