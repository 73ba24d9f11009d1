// Entry Machine routing end to end, as root on a real three-Machine lab (real dockerd, wireguard-go, ployzd per
// Machine): from m1's socket, DescribeContract of m2 and m3 through forwarding; `ployz logs` over a Service with
// containers on m2 and m3 returns both Machines' lines, each named; `ployz ps --all-machines` lists every Machine's
// containers; a log stream passes through the Entry Machine; a caller on the mesh that is not a Machine (a
// container on m2) and one off the mesh (the host) get no answer from m1's mesh port; an image only m1 has is
// copied to m2 over the mesh and runs there; with m3 partitioned away, m3 is named as not answering while m2
// answers.
import assert from "node:assert/strict";
import { join } from "node:path";
import { connectMachine, type MachineClient, RpcError, viaEntry } from "../lib/rpc/mod.ts";
import { IMAGE } from "./support/docker.ts";
import { eventually, sleep } from "./support/poll.ts";
import type { RunResult } from "./support/spawn.ts";
import { labDocker, labPlace, onPloyzNetwork, ployzCli } from "./support/lab.ts";
import { needs } from "./support/needs.ts";

const MACHINES = ["m1", "m2", "m3"];

Deno.test(needs(["lab"], {
  name:
    "Entry Machine routing on a lab: forward, fan-out logs and ps, mesh allow-list, image copy, partition",
  async fn(t) {
    const { tag, name, dir, at, env } = labPlace("r");
    const runDir = (m: string): string => join(dir, m, "run");
    const { ployz, ok } = ployzCli(env);
    const docker = (m: string, args: string[]): Promise<RunResult> => labDocker(dir, m, args);
    // The CLI attached to m1 (its socket), as an operator on m1 would run it.
    const fromM1 = (args: string[]): Promise<RunResult> => ployz(args, { PLOYZ_RUN_DIR: runDir("m1") });
    let entry: MachineClient | undefined;

    try {
      const started = Date.now();
      await ok(["lab", "up", "--machines", "3", "--name", name, ...at]);
      console.log(`lab up (3 Machines): ${((Date.now() - started) / 1000).toFixed(1)} s`);
      entry = connectMachine({ socketPath: join(runDir("m1"), "ployz.sock"), label: "m1" });
      const m1 = entry;
      const ids: Record<string, string> = {};
      await eventually(60_000, "m1 sees 3 Machines up", async () => {
        const listed = await m1.listMachines();
        if (listed.machines.length !== 3 || listed.machines.some((m) => m.membership !== "up")) {
          return undefined;
        }
        for (const m of listed.machines) ids[m.name] = m.id;
        return true;
      });

      // Each Machine's daemon starts its own Observe Store (a child here, no systemd), for `ployz logs`.

      await t.step("from m1's socket, DescribeContract of m2 and m3 through forwarding", async () => {
        const contract = await m1.describeContract();
        assert.ok(contract.capabilities.includes("ployz.machine.forward.v1"));
        for (const m of ["m2", "m3"]) {
          const via = viaEntry(m1, ids[m], { name: m });
          const answer = await via.describeContract();
          assert.equal(answer.machine_name, m);
          assert.equal(answer.machine_id, ids[m]);
          assert.ok(answer.capabilities.includes("ployz.image.pull_from_peer.v1"));
        }
      });

      // A Service `rt/web` with one container on m2 and one on m3, created in those Machines' own dockerd.
      for (const m of ["m2", "m3"]) {
        const made = await docker(m, [
          "run",
          "-d",
          "--name",
          `web-${m}`,
          "--log-driver",
          "local",
          "--label",
          "ployz.managed=1",
          "--label",
          `ployz.machine=${ids[m]}`,
          "--label",
          "ployz.project=rt",
          "--label",
          "ployz.service=web",
          IMAGE,
          "sh",
          "-c",
          `echo hello-from-${m}; exec sleep 3600`,
        ]);
        assert.equal(made.code, 0, made.stderr);
      }

      await t.step("ployz logs through m1 returns lines from m2 and m3, each Machine named", async () => {
        const lines = await eventually(45_000, "lines from m2 and m3", async () => {
          const result = await fromM1(["logs", "rt/web", "--json"]);
          if (result.code !== 0) throw new Error(result.stderr);
          const answer = JSON.parse(result.stdout) as { lines: { text: string; machine_name: string }[] };
          const seen = answer.lines.map((l) => `${l.machine_name}:${l.text.trim()}`);
          return seen.includes("m2:hello-from-m2") && seen.includes("m3:hello-from-m3") ? seen : undefined;
        });
        assert.ok(!lines.some((l) => l.startsWith("m1:")), "m1 runs no container of rt/web");
      });

      await t.step("a log stream passes through the Entry Machine", async () => {
        const via = viaEntry(m1, ids.m3, { name: "m3" });
        const stream = await via.tailLogs(
          { selector: { project: "rt", service: "web" }, since: "0" },
          { signal: AbortSignal.timeout(30_000) },
        );
        const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
        let seen = "";
        try {
          while (!seen.includes("hello-from-m3")) {
            const next = await reader.read();
            if (next.done) break;
            seen += next.value;
          }
        } finally {
          await reader.cancel().catch(() => {});
        }
        assert.match(seen, /hello-from-m3/);
      });

      await t.step(
        "ployz ps --all-machines lists every Machine's containers with the Machine named",
        async () => {
          const table = await fromM1(["ps", "--all-machines"]);
          assert.equal(table.code, 0, table.stderr);
          assert.match(table.stdout, /web-m2 .* m2\n/);
          assert.match(table.stdout, /web-m3 .* m3\n/);
          for (const m of MACHINES) assert.match(table.stderr, new RegExp(`Machine "${m}" answered`));
          const json = JSON.parse((await fromM1(["ps", "--all-machines", "--json"])).stdout);
          assert.deepEqual(
            json.machines.map((m: { machine_name: string }) => m.machine_name).sort(),
            MACHINES,
          );
          assert.deepEqual(json.failures, []);
        },
      );

      await t.step("m1's mesh port answers no caller that is not a Machine of the Cluster", async () => {
        // A container on m2 reaches m1's gateway over WireGuard, from an address inside m2's subnet.
        const probe = await docker(
          "m2",
          onPloyzNetwork(
            `wget -q -O - --post-data '{"protocol_major":1}' ` +
              `http://10.210.0.1:51000/rpc/ployz.machine.describe_contract.v1 2>&1; echo rc=$?`,
          ),
        );
        assert.match(probe.stdout, /401 Unauthorized/, probe.stdout + probe.stderr);
        assert.match(probe.stdout, /rc=1/);
        // The host is off the mesh: the firewall drops what does not come in over WireGuard.
        const reached = await Promise.race([
          Deno.connect({ hostname: "10.210.0.1", port: 51000 }).then((c) => {
            c.close();
            return "connected";
          }, () => "refused"),
          sleep(3_000).then(() => "no answer"),
        ]);
        assert.notEqual(reached, "connected");
      });

      await t.step("an image only m1 has is copied to m2 over the mesh and runs there", async () => {
        const ref = `ployz-test/routing-copy:${tag}`;
        assert.equal((await docker("m1", ["tag", IMAGE, ref])).code, 0);
        assert.notEqual(
          (await docker("m2", ["image", "inspect", ref])).code,
          0,
          "m2 lacks the image at first",
        );
        const copied = await fromM1(["image", "copy", ref, "--from", "m1", "--to", "m2"]);
        assert.equal(copied.code, 0, copied.stderr);
        assert.match(
          copied.stdout,
          new RegExp(`Copied image "${ref}" from "m1" to "m2": [\\d.]+ MB in \\d+ ms`),
        );
        console.log(copied.stdout.trim());
        const ran = await docker("m2", ["run", "--rm", ref, "echo", "copied-ok"]);
        assert.equal(ran.stdout.trim(), "copied-ok", ran.stderr);
        const again = await fromM1(["image", "copy", ref, "--from", "m1", "--to", "m2"]);
        assert.match(again.stdout, /already has image/);
        assert.notEqual((await docker("m3", ["image", "inspect", ref])).code, 0, "m3 was not asked");
      });

      await t.step("m3 partitioned away: named as not answering, m2 still answers", async () => {
        await ok(["lab", "partition", "m1,m2", "/", "m3", ...at]);
        const via = viaEntry(m1, ids.m3, { name: "m3" });
        const began = Date.now();
        const refused = await via.describeContract().then(() => undefined, (e) => e);
        assert.ok(refused instanceof RpcError, String(refused));
        assert.equal(refused.code, "unavailable");
        assert.match(
          refused.message,
          /^Cannot reach Machine "m3" .* from Entry Machine "m1" .*"m1" observes it \w+/,
        );
        assert.ok(Date.now() - began < 12_000, `refused after ${Date.now() - began} ms`);
        console.log(`partitioned m3: ${refused.message}`);

        const result = await fromM1(["logs", "rt/web", "--json"]);
        assert.equal(result.code, 0, result.stderr);
        const answer = JSON.parse(result.stdout);
        assert.ok(answer.lines.some((l: { machine_name: string }) => l.machine_name === "m2"));
        assert.deepEqual(answer.failures.map((f: { machine_name: string }) => f.machine_name), ["m3"]);
        assert.equal(answer.failures[0].code, "unavailable");
        assert.deepEqual(answer.answered.map((a: { machine_name: string }) => a.machine_name).sort(), [
          "m1",
          "m2",
        ]);
      });
    } finally {
      entry?.close();
      const down = await ployz(["lab", "down", ...at]);
      if (down.code !== 0) console.error(`lab down failed: ${down.stderr}`);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
}));
