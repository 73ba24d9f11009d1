// A Machine gone for good, end to end on a real 3-Machine lab with the default membership thresholds:
// `machine rm m3 --gone` is refused while m3 answers a probe; once m3 is cut off it is refused with what m1 saw and
// the time it will accept, and accepted promptly after that (its WireGuard session still counts it "up" for up to
// 185 s), first asking to confirm the Data Loss of what m3 held; then m1 writes the retired mark, and every view on
// m1 and m2 (Machines, containers, fan-out) leaves m3 out. m3 started again and reconnected stays out: its peers no
// longer peer with it.
import assert from "node:assert/strict";
import { join } from "node:path";
import { labStartMachine, labStopMachine } from "../lib/lab/mod.ts";
import { IMAGE } from "./support/docker.ts";
import { machinesUp, startLab } from "./support/lab.ts";
import { needs } from "./support/needs.ts";
import { eventually, sleep } from "./support/poll.ts";

const COMPOSE = `name: keep
services:
  web:
    image: ${IMAGE}
    command: ["sleep", "3600"]
    stop_grace_period: 1s
    deploy: {replicas: 3}
  agent:
    image: ${IMAGE}
    command: ["sleep", "3600"]
    stop_grace_period: 1s
    deploy: {mode: global}
`;

interface ListedMachines {
  machines: { name: string; membership: string }[];
}

Deno.test(needs(["lab"], {
  name:
    "machine rm --gone retires a dead Machine from any Machine; every view leaves it out, even when it returns",
  async fn() {
    await using lab = await startLab("gn", 3);
    await machinesUp(lab, "m1", 3);
    const path = join(lab.dir, "keep.yaml");
    await Deno.writeTextFile(path, COMPOSE);
    const deployed = await lab.on("m1", ["deploy", "-f", path, "-y", "--monitor", "1s"]);
    assert.equal(deployed.code, 0, deployed.stderr + deployed.stdout);
    const machinesOn = async (m: string): Promise<ListedMachines["machines"]> =>
      (JSON.parse((await lab.on(m, ["machine", "ls", "--json"])).stdout) as ListedMachines).machines;

    // A Machine that answers is not gone.
    const answering = await lab.on("m1", ["machine", "rm", "m3", "--gone", "--confirm-data-loss", "m3"]);
    assert.equal(answering.code, 1);
    assert.match(
      answering.stderr,
      /^error\[conflict\]: Refusing to retire Machine "m3" as gone: it answered a probe from "m1" over the mesh just now \(in \d+ m?s\); a Machine that answers leaves by itself: "ployz machine rm m3"/,
    );

    // m3 dies for good: cut off, then its daemon and Docker stopped. Right after the cut m1 still heard from it
    // lately: refused, naming when it will accept.
    const cut = await lab.lab(["partition", "m1,m2", "/", "m3"]);
    assert.equal(cut.code, 0, cut.stderr);
    const cutAt = Date.now();
    const early = await lab.on("m1", ["machine", "rm", "m3", "--gone", "--confirm-data-loss", "m3"]);
    assert.equal(early.code, 1, early.stdout);
    const promised =
      /^error\[conflict\]: Refusing to retire Machine "m3" as gone: "m1" last heard from it \d+ m?s ago \(at [^)]+\) and it did not answer a probe over the mesh; .*: try again after (\S+) \(in \d+ m?s\) \([^\n]+\)$/m
        .exec(early.stderr);
    assert.ok(promised !== null, early.stderr);
    console.log(`right after the cut: ${early.stderr.trim()}`);
    const acceptAfter = Date.parse(promised[1]);
    assert.ok(acceptAfter > cutAt - 30_000 && acceptAfter <= Date.now() + 30_000, promised[1]);
    await labStopMachine({ dir: lab.dir, machine: "m3" });

    // Accepted once that time passed: what m3 held is named, and nothing changes until it is confirmed.
    let unconfirmed = await lab.on("m1", ["machine", "rm", "m3", "--gone"]);
    await eventually(90_000, "m1 judges m3 gone", async () => {
      unconfirmed = await lab.on("m1", ["machine", "rm", "m3", "--gone"]);
      return /confirm the Data Loss/.test(unconfirmed.stderr) ? true : undefined;
    });
    const acceptedAt = Date.now();
    assert.ok(acceptedAt >= acceptAfter, "not before the time the refusal named");
    const label = (await machinesOn("m1")).find((m) => m.name === "m3")?.membership;
    console.log(
      `--gone accepted ${Math.round((acceptedAt - cutAt) / 1000)} s after m3 was cut off ` +
        `(m1's membership label for m3 then: ${label})`,
    );
    assert.notEqual(label, "down", "accepted before the membership label would have said down");
    assert.equal(unconfirmed.code, 1);
    assert.match(
      unconfirmed.stderr,
      /^error\[conflict\]: Machine "m3" held 2 thing\(s\) the Cluster loses with it \(container keep-agent-1-\w+, container keep-web-\d-\w+\): confirm the Data Loss with its name: pass --confirm-data-loss m3/,
    );
    assert.ok((await machinesOn("m2")).some((m) => m.name === "m3"), "nothing changed");

    const removed = await lab.on("m1", ["machine", "rm", "m3", "--gone", "--confirm-data-loss", "m3"]);
    assert.equal(removed.code, 0, removed.stderr + removed.stdout);
    assert.match(
      removed.stdout,
      /Machine "m3" \(\w+\) removed as gone: .*\("m1" last heard from it \d+ s ago \(at [^)]+\), and it did not answer a probe over the mesh \([^)]+\)\); lost with it: 2 container\(s\), 0 volume\(s\); subnet 10\.210\.\d+\.0\/24 kept retired in the allocation history/,
    );

    console.log(`accepted: ${removed.stdout.trim()}`);
    const receipts = await lab.on("m1", ["receipts", "--json"]);
    assert.match(receipts.stdout, /"leg":"retire","receipt":\{"status":"succeeded"/, receipts.stdout);

    // Every view on m1 and m2 leaves m3 out: Machines, and each fan-out asks only m1 and m2.
    const clean = async (m: string): Promise<true | undefined> => {
      const names = (await machinesOn(m)).map((x) => x.name).sort();
      if (names.join(",") !== "m1,m2") return undefined;
      const ps = await lab.on(m, ["ps", "--all-machines", "--json"]);
      if (ps.code !== 0 || ps.stdout.includes('"m3"')) return undefined;
      const ls = await lab.on(m, ["ls", "--json"]);
      return ls.code === 0 && !ls.stdout.includes('"m3"') ? true : undefined;
    };
    await eventually(30_000, "m1's views leave m3 out", () => clean("m1"));
    await eventually(30_000, "m2's views leave m3 out", () => clean("m2"));
    const gone = await lab.on("m2", ["machine", "rm", "m3", "--gone"]);
    assert.match(gone.stderr, /^error\[not_found\]: Cannot find Machine "m3"/);

    // m3 comes back: started again and reconnected, it is still no peer, and no view shows it.
    const backAt = Date.now();
    await labStartMachine({ dir: lab.dir, machine: "m3" });
    const heal = await lab.lab(["heal"]);
    assert.equal(heal.code, 0, heal.stderr);
    await sleep(10_000);
    assert.equal(await clean("m1"), true, "m1 still leaves m3 out");
    assert.equal(await clean("m2"), true, "m2 still leaves m3 out");
    // The operator who removed it is told so when a command reaches it.
    const told = await lab.on("m3", ["machine", "ls"]);
    assert.match(
      told.stderr,
      /^warning: Machine "m3" \(\w+\) was removed from its Cluster with "machine rm --gone" at .*: its peers no longer peer with it; reset it/,
    );
    // Nothing from m1 or m2 reached m3 since it came back (its own evidence, not the handshake-based label).
    const fromM3 = (JSON.parse((await lab.on("m3", ["machine", "ls", "--json"])).stdout) as {
      machines: { name: string; "last_received_at"?: string; "last_store_traffic_at"?: string }[];
    }).machines;
    for (const peer of fromM3.filter((m) => m.name !== "m3")) {
      for (const at of [peer.last_received_at, peer.last_store_traffic_at]) {
        assert.ok(
          at === undefined || Date.parse(at) < backAt,
          `m3 must not hear from ${peer.name} again (${at})`,
        );
      }
    }
  },
}));
