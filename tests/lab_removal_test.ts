// Removal marks end to end on a real three-Machine lab: `ployz rm` of a Project with m3 partitioned away removes
// the containers on m1 and m2, reports m3 pending with its reason, and removes the Saved State; `scale` then refuses
// and nothing is recreated; after the heal m3 removes its own containers with no further command; adding m3 again
// (Global catch-up) does not bring the Project back; `--volumes` is refused until each volume is named, then removes
// it, and a volume a Machine cannot remove is named in `--status`; a re-run with the request key marks nothing
// again and reports done; `scale` keeps a receipt too; `--status` and `--cancel` read and cancel marks; removing
// a Project that does not exist is a clear error.
import assert from "node:assert/strict";
import { join } from "node:path";
import { IMAGE } from "./support/docker.ts";
import { machinesUp, startLab } from "./support/lab.ts";
import { needs } from "./support/needs.ts";
import { eventually } from "./support/poll.ts";
import { sleepService } from "./support/web_service.ts";

/** Project `name`: one Service, db, holding the named volume `data`. */
function dbWithVolume(name: string): string {
  return `name: ${name}\nservices:\n  db:\n    image: ${IMAGE}\n    command: ["sleep", "3600"]\n` +
    `    volumes: ["data:/data"]\n    stop_grace_period: 1s\nvolumes:\n  data: {}\n`;
}

Deno.test(needs(["lab"], {
  name: "rm with m3 partitioned: pending on m3, finished by m3 after the heal; nothing resurrects it",
  async fn(t) {
    await using lab = await startLab("rmv", 3);
    await machinesUp(lab, "m1", 3);
    const compose = (name: string): Promise<string> => {
      const path = join(lab.dir, `${name}.yaml`);
      return Deno.writeTextFile(
        path,
        `name: ${name}\nservices:\n${sleepService("agent", "{mode: global}")}${
          sleepService("web", "{replicas: 3}")
        }`,
      ).then(() => path);
    };
    const held = async (m: string, project: string): Promise<string[]> => {
      const r = await lab.docker(m, [
        "ps",
        "-a",
        "--format",
        "{{.Names}}",
        "--filter",
        `label=ployz.project=${project}`,
      ]);
      assert.equal(r.code, 0, r.stderr);
      return r.stdout.split("\n").filter((s) => s !== "").sort();
    };
    for (const p of ["gone", "kept"]) {
      const r = await lab.on("m1", ["deploy", "-f", await compose(p), "-y", "--monitor", "1s"]);
      assert.equal(r.code, 0, r.stderr + r.stdout);
    }
    for (const m of ["m1", "m2", "m3"]) assert.equal((await held(m, "gone")).length, 2, `gone on ${m}`);
    let rmKey = "";

    await t.step("a Project that does not exist is a clear error", async () => {
      const r = await lab.on("m1", ["rm", "nope", "-y"]);
      assert.notEqual(r.code, 0);
      assert.match(
        r.stderr,
        /^error\[not_found\]: Project "nope" does not exist: no Saved State, and none of the 3 Machines that answered runs a container of it\n$/,
      );
    });

    await t.step("rm with m3 partitioned: done on m1 and m2, pending on m3 with its reason", async () => {
      await lab.lab(["partition", "m1,m2", "/", "m3"]).then((r) => assert.equal(r.code, 0, r.stderr));
      const started = Date.now();
      const r = await lab.on("m1", ["rm", "gone", "-y", "--wait", "30"]);
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      console.log(`rm with m3 partitioned: ${seconds} s\n${r.stdout}`);
      assert.equal(r.code, 1, r.stderr + r.stdout);
      assert.match(r.stdout, /Removal of "gone\/\*" pending/);
      assert.match(r.stdout, /Removed \(4\):/);
      assert.match(r.stdout, /Pending \(1 Machine\): .*\n {2}- m3: .*Cannot reach Machine "m3"/);
      assert.match(r.stdout, /Saved State: removed/);
      rmKey = /\nrequest key: (\S+)\n$/.exec(r.stdout)?.[1] ?? "";
      assert.match(rmKey, /^rm-gone-/, r.stdout);
      assert.deepEqual(await held("m1", "gone"), []);
      assert.deepEqual(await held("m2", "gone"), []);
      assert.equal((await held("m3", "gone")).length, 2, "m3 keeps them while cut off");
      assert.equal((await held("m1", "kept")).length, 2, "another Project is untouched");
      const status = await lab.on("m1", ["rm", "--status", "gone"]);
      assert.equal(status.code, 0, status.stderr);
      assert.match(
        status.stdout,
        /gone\/\* {2}pending {2}removal .* acked by m\d,m\d\n {2}remaining on m3: /,
      );
    });

    await t.step("scale after rm refuses: the Saved State went with the mark", async () => {
      const r = await lab.on("m1", ["scale", "gone/web=3", "-y"]);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /error\[not_found\]: Project "gone" has no Saved State/);
      assert.deepEqual(await held("m1", "gone"), []);
    });

    await t.step("after the heal m3 removes its own containers, with no command", async () => {
      const healed = Date.now();
      await lab.lab(["heal"]).then((r) => assert.equal(r.code, 0, r.stderr));
      await eventually(
        120_000,
        "m3 removed its gone containers",
        async () => (await held("m3", "gone")).length === 0 ? true : undefined,
      );
      console.log(`m3 finished the removal ${((Date.now() - healed) / 1000).toFixed(1)} s after the heal`);
      assert.equal((await held("m3", "kept")).length, 2, "m3 keeps the other Project");
      const status = await lab.on("m1", ["rm", "--status", "gone"]);
      assert.match(status.stdout, /gone\/\* {2}done {2}/);
      // The same request again: its mark is known written, so nothing is asked or marked; it reports done.
      const again = await lab.on("m1", ["rm", "gone", "--request-key", rmKey, "--wait", "30"]);
      assert.equal(again.code, 0, again.stderr + again.stdout);
      const id = /removal ([0-9a-f]{8})/.exec(status.stdout)?.[1];
      assert.match(again.stdout, new RegExp(`^Removal of "gone/\\*" done \\(removal ${id},`), again.stdout);
      const receipts = await lab.on("m1", ["receipts", rmKey, "--json"]);
      const legs =
        (JSON.parse(receipts.stdout) as { receipts: { leg: string; receipt: { status: string } }[] })
          .receipts.map((r) => `${r.leg}=${r.receipt.status}`).sort();
      assert.deepEqual(legs, ["mark=marked", "wait=done"]);
    });

    await t.step(
      "adding m3 again runs the Global catch-up: the removed Project does not come back",
      async () => {
        const added = await lab.on("m1", [
          "machine",
          "add",
          "--socket",
          join(lab.dir, "m3", "run", "ployz.sock"),
          "--name",
          "m3",
        ]);
        assert.equal(added.code, 0, added.stderr + added.stdout);
        assert.doesNotMatch(added.stdout, /"gone"/);
        for (const m of ["m1", "m2", "m3"]) {
          assert.deepEqual(await held(m, "gone"), [], `nothing of gone on ${m}`);
        }
      },
    );

    await t.step("rm --volumes is Data Loss: refused unless each volume is named, then removed", async () => {
      await lab.deploy("m1", "vol.yaml", dbWithVolume("vol"));
      const volumes = async (): Promise<string[]> =>
        (await Promise.all(["m1", "m2", "m3"].map(async (m) => {
          const r = await lab.docker(m, ["volume", "ls", "-q", "--filter", "name=vol_data"]);
          return r.stdout.split("\n").filter((v) => v !== "").map((v) => `${v}@${m}`);
        }))).flat();
      assert.equal((await volumes()).length, 1);
      const refused = await lab.on("m1", ["rm", "vol", "--volumes", "-y"]);
      assert.notEqual(refused.code, 0, refused.stderr + refused.stdout);
      assert.match(
        refused.stderr,
        /error\[invalid_argument\]: Refusing to remove volumes without confirmation: it destroys "vol_data"/,
      );
      assert.equal(
        (await held("m1", "vol")).length + (await held("m2", "vol")).length +
          (await held("m3", "vol")).length,
        1,
      );
      const removed = await lab.on("m1", ["rm", "vol", "--volumes", "--confirm-data-loss", "vol_data", "-y"]);
      assert.equal(removed.code, 0, removed.stderr + removed.stdout);
      assert.match(removed.stdout, /Volumes removed by each Machine once its containers are gone: vol_data/);
      await eventually(
        30_000,
        "the volume is gone",
        async () => (await volumes()).length === 0 ? true : undefined,
      );
    });

    await t.step("a volume a Machine cannot remove for a mark shows in rm --status", async () => {
      await lab.deploy("m1", "pin.yaml", dbWithVolume("pin"));
      let holder = "";
      for (const m of ["m1", "m2", "m3"]) if ((await held(m, "pin")).length > 0) holder = m;
      // A container run by hand keeps the volume in use, so Docker refuses its removal.
      const pinned = await lab.docker(holder, [
        "run",
        "-d",
        "--name",
        "pin-by-hand",
        "-v",
        "pin_data:/x",
        IMAGE,
        "sleep",
        "3600",
      ]);
      assert.equal(pinned.code, 0, pinned.stderr);
      try {
        const removed = await lab.on("m1", [
          "rm",
          "pin",
          "--volumes",
          "--confirm-data-loss",
          "pin_data",
          "-y",
        ]);
        assert.equal(removed.code, 0, removed.stderr + removed.stdout);
        const status = await eventually(60_000, "rm --status names the volume not removed", async () => {
          const r = await lab.on("m1", ["rm", "--status", "pin"]);
          return /volume not removed/.test(r.stdout) ? r.stdout : undefined;
        });
        console.log(`rm --status pin:\n${status}`);
        assert.match(
          status,
          new RegExp(`\n {2}volume not removed on ${holder}: cannot remove volume "pin_data": \\S`),
          status,
        );
      } finally {
        await lab.docker(holder, ["rm", "-f", "pin-by-hand"]);
      }
    });

    await t.step("rm of one Service, then --cancel of a mark; a redeploy is never covered", async () => {
      const again = await lab.on("m1", ["deploy", "-f", await compose("gone"), "-y", "--monitor", "1s"]);
      assert.equal(again.code, 0, again.stderr + again.stdout);
      for (const m of ["m1", "m2", "m3"]) {
        assert.equal((await held(m, "gone")).length, 2, `redeployed on ${m}`);
      }
      // scale keeps a receipt: the same request again sends nothing.
      const scale = () => lab.on("m1", ["scale", "gone/web=2", "-y", "--request-key", "scale-gone-web-lab"]);
      const scaled = await scale();
      assert.equal(scaled.code, 0, scaled.stderr + scaled.stdout);
      assert.match(scaled.stdout, /\nrequest key: scale-gone-web-lab\n$/);
      const rescaled = await scale();
      assert.equal(rescaled.code, 0, rescaled.stderr + rescaled.stdout);
      assert.equal(
        rescaled.stdout,
        `Scale of "gone/web" to 2 already ended (succeeded) in an earlier run of this request: nothing sent\n` +
          `request key: scale-gone-web-lab\n`,
      );
      const running = await Promise.all(["m1", "m2", "m3"].map(async (m) => {
        const r = await lab.docker(m, [
          "ps",
          "--format",
          "{{.Names}}",
          "--filter",
          "label=ployz.project=gone",
          "--filter",
          "label=ployz.service=web",
        ]);
        return r.stdout.split("\n").filter((n) => n !== "");
      }));
      assert.equal(running.flat().length, 2, running.flat().join(","));
      const one = await lab.on("m1", ["rm", "kept/web", "-y"]);
      assert.equal(one.code, 0, one.stderr + one.stdout);
      assert.match(one.stdout, /Removal of "kept\/web" done/);
      for (const m of ["m1", "m2", "m3"]) {
        assert.deepEqual(
          (await held(m, "kept")).map((n) => n.replace(/-\d+-[0-9a-f]+$/, "")),
          ["kept-agent"],
          m,
        );
      }
      const cancel = await lab.on("m1", ["rm", "--cancel", "kept/web"]);
      assert.equal(cancel.code, 0, cancel.stderr);
      const twice = await lab.on("m1", ["rm", "--cancel", "kept/web"]);
      assert.match(twice.stderr, /error\[not_found\]: No active removal of "kept\/web" to cancel/);
    });
  },
}));
