// A Machine gone for good, end to end on a real 3-Machine lab with the default membership thresholds:
// `machine rm m3 --gone` is refused while m3 answers a probe; once m3 is cut off it is refused with what m1 saw and
// the time it will accept, and accepted promptly after that (its WireGuard session still counts it "up" for up to
// 185 s), first asking to confirm the Data Loss of what m3 held; then m1 writes the retired mark, and every view on
// m1 and m2 (Machines, containers, fan-out) leaves m3 out. m3 started again and reconnected stays out: its peers
// keep it only as a quarantined peer whose every request is refused with the signed row that retired it; m3 checks
// that row, records it, says so in "machine ls", stops syncing and reaches nothing else; its containers stay until
// it leaves the Cluster with the command it names.
import assert from "node:assert/strict";
import { labExec, labRestart, labStartMachine, labStopMachine } from "../lib/lab/mod.ts";
import { IMAGE } from "./support/docker.ts";
import { machinesUp, startLab } from "./support/lab.ts";
import { needs } from "./support/needs.ts";
import { eventually } from "./support/poll.ts";

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
  machines: { name: string; membership: string; subnet?: string }[];
}

Deno.test(needs(["lab"], {
  name:
    "machine rm --gone retires a dead Machine from any Machine; every view leaves it out, even when it returns",
  async fn() {
    await using lab = await startLab("gn", 3);
    await machinesUp(lab, "m1", 3);
    await lab.deploy("m1", "keep.yaml", COMPOSE);
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

    // m3 comes back: started again and reconnected. Its peers keep it only as a quarantined WireGuard peer (its
    // Machine Gateway, nothing of its subnet): every store sync and Machine RPC request of it is answered with the
    // signed row that retired it, which it checks and records, and nothing else of it gets through.
    const backAt = Date.now();
    await labStartMachine({ dir: lab.dir, machine: "m3" });
    const heal = await lab.lab(["heal"]);
    assert.equal(heal.code, 0, heal.stderr);
    interface Told {
      removed?: { by: string; "by_name"?: string; at?: string; "noticed_at"?: string };
    }
    let told: Told = {};
    await eventually(60_000, "m3 is told it was removed", async () => {
      const listed = await lab.on("m3", ["machine", "ls", "--json"]);
      if (listed.code !== 0) return undefined;
      told = JSON.parse(listed.stdout) as Told;
      return told.removed !== undefined ? true : undefined;
    });
    console.log(`m3 told it was removed ${Math.round((Date.now() - backAt) / 1000)} s after it came back`);
    assert.equal(told.removed?.by_name, "m1");
    const subnet1 = (await machinesOn("m1")).find((m) => m.name === "m1")?.subnet ?? "";
    const human = await lab.on("m3", ["machine", "ls"]);
    const named =
      /^warning: this Machine, "m3" \(\w+\), was removed from its Cluster by Machine "m1" \(\w+\) at \S+ \("machine rm --gone"\); every peer refuses it and it no longer syncs \(told at \S+\); its containers are left as they are\. Its id is never admitted again: "ployz machine rm m3 --socket (\S+) --confirm-data-loss m3" on it leaves the Cluster/
        .exec(human.stderr);
    assert.ok(named !== null, human.stderr);
    console.log(`m3 says: ${human.stderr.trim()}`);
    // Its containers are left alone.
    const kept = await lab.docker("m3", ["ps", "-aq", "--filter", "label=ployz.project=keep"]);
    assert.equal(kept.stdout.trim().split("\n").filter((l) => l).length, 2, kept.stdout + kept.stderr);

    // What m3 sends reaches the mesh port's refusal and nothing else: its Machine RPC fan-out is refused naming
    // who removed it, the same port answers it with the refusal, and a ping of m1's gateway gets nothing back
    // (m2's does: the path itself works).
    const fanOut = await lab.on("m3", ["ps", "--all-machines"]);
    assert.match(
      fanOut.stdout + fanOut.stderr,
      /removed from this Cluster by Machine "m1"/,
      fanOut.stdout + fanOut.stderr,
    );
    const gateway1 = subnet1.replace(/\.0\/24$/, ".1");
    const refusal = await labExec({
      dir: lab.dir,
      machine: "m3",
      argv: ["curl", "-s", "-m", "5", `http://${gateway1}:51000/store/v1/vector`],
    });
    assert.match(
      refusal.stdout,
      /^\{"code":"unauthenticated","message":"Machine \\"m3\\" \(\w+\) was removed from this Cluster by Machine \\"m1\\"/,
    );
    assert.match(refusal.stdout, /"removed":\{"site":"\w+","version":\d+,"table":"retired_machines"/);
    const ping = (m: string): Promise<{ code: number }> =>
      labExec({ dir: lab.dir, machine: m, argv: ["ping", "-c", "2", "-W", "1", "-q", gateway1] });
    assert.equal((await ping("m2")).code, 0, "m2 reaches m1's gateway");
    assert.notEqual((await ping("m3")).code, 0, "m3 reaches nothing of m1 but the mesh port");

    // The removal is recorded: a restarted m3 still says so, without being told again.
    await labRestart({ dir: lab.dir, machine: "m3" });
    const again = JSON.parse((await lab.on("m3", ["machine", "ls", "--json"])).stdout) as Told;
    assert.deepEqual(again.removed, told.removed);
    assert.equal(await clean("m1"), true, "m1 still leaves m3 out");
    assert.equal(await clean("m2"), true, "m2 still leaves m3 out");

    // What it names works: on m3, it leaves the Cluster and its containers go; m1 and m2 stay as they were.
    const left = await lab.on("m3", [
      "machine",
      "rm",
      "m3",
      "--socket",
      named[1],
      "--confirm-data-loss",
      "m3",
    ]);
    assert.equal(left.code, 0, left.stderr + left.stdout);
    console.log(`m3 leaves: ${left.stdout.trim()}`);
    const after = await lab.docker("m3", ["ps", "-aq", "--filter", "label=ployz.project=keep"]);
    assert.equal(after.stdout.trim(), "", after.stderr);
    assert.equal(await clean("m1"), true, "m1 still leaves m3 out");
    assert.equal(await clean("m2"), true, "m2 still leaves m3 out");
  },
}));
