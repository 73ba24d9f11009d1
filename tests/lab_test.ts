// `ployz lab` end to end, as root on real components: three Machines (namespaces, per-Machine dockerd and ployzd,
// whose wireguard-go mesh ployzd brings up after the lab joined them), a container on m1 reaching an httpd
// container on m3 by its address on the Machine network, a partition m1,m2 / m3 and its healing, and a `lab down`
// that leaves nothing behind.
import assert from "node:assert/strict";
import { wgInterfaceName } from "../lib/lab/mod.ts";
import { DOCKER_SOCKET } from "./support/docker.ts";
import { exists, run } from "./support/spawn.ts";
import { fetchInLab, helloServer, labAddress, labExec, labPlace, ployzCli } from "./support/lab.ts";
import { needs } from "./support/needs.ts";

const { ployz, ok } = ployzCli({ PLOYZ_DOCKER_SOCKET: DOCKER_SOCKET });

/** Live (non-zombie) processes whose command line mentions `needle`. */
function liveProcessesMentioning(needle: string): string[] {
  const found: string[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const argv = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).split("\0").join(" ");
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      if (state !== "Z" && argv.includes(needle)) found.push(`${entry.name}: ${argv}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

Deno.test(needs(["lab"], {
  name: "ployz lab: 3 Machines, cross-Machine container traffic, partition and heal, clean teardown",
  async fn() {
    const { name, dir, at } = labPlace("t");
    const wgNames = [1, 2, 3].map((i) => wgInterfaceName(name, i));
    try {
      const started = Date.now();
      const up = await ok(["lab", "up", "--machines", "3", "--name", name, ...at]);
      console.log(`lab up (3 Machines): ${((Date.now() - started) / 1000).toFixed(1)} s`);
      assert.match(up.stdout, /m3 {2}netns t\w+-3 {2}subnet 10\.210\.2\.0\/24/);

      const status = JSON.parse((await ok(["lab", "status", "--json", ...at])).stdout);
      assert.equal(status.machines.length, 3);
      for (const m of status.machines) assert.equal(m.dockerd, true, `dockerd of ${m.name} answers`);
      assert.ok(status.machines[0].peers.every((p: { latest_handshake?: string }) => "membership" in p));

      await ok(labExec("m3", at, ["docker", ...helloServer("web", "m3")]));
      const address = await labAddress({ ployz, ok }, dir, "m3", "web");
      assert.match(address, /^10\.210\.2\.\d+$/, "the container is on m3's Machine Subnet");
      const fetch = fetchInLab(dir, "m1", `http://${address}/`);

      const before = await ok(fetch);
      assert.match(before.stdout, /hello-from-m3\s+rc=0/, `m1 reaches m3: ${before.stdout}`);

      await ok(["lab", "partition", "m1,m2", "/", "m3", ...at]);
      const cut = await ok(fetch);
      assert.doesNotMatch(cut.stdout, /hello-from-m3/, "m1 cannot reach m3 while partitioned");
      assert.doesNotMatch(cut.stdout, /rc=0/);
      const sameSide = await ployz(labExec("m1", at, ["ping", "-c", "2", "-W", "3", "10.210.1.1"]));
      assert.equal(sameSide.code, 0, `m1 still reaches m2: ${sameSide.stdout}${sameSide.stderr}`);
      assert.deepEqual(JSON.parse((await ok(["lab", "status", "--json", ...at])).stdout).partitions, [[[
        "m1",
        "m2",
      ], ["m3"]]]);

      await ok(["lab", "heal", ...at]);
      const after = await ok(fetch);
      assert.match(after.stdout, /hello-from-m3\s+rc=0/, `m1 reaches m3 again after heal: ${after.stdout}`);
    } finally {
      const down = await ployz(["lab", "down", ...at]);
      assert.equal(down.code, 0, `lab down failed: ${down.stderr}`);
    }
    const namespaces = (await run("ip", ["netns", "list"])).stdout;
    assert.equal(
      namespaces.split("\n").some((l) => l.startsWith(`${name}-`)),
      false,
      `namespaces left: ${namespaces}`,
    );
    for (const wg of wgNames) {
      assert.equal(exists(`/var/run/wireguard/${wg}.sock`), false, `UAPI socket of ${wg} left`);
      assert.notEqual(
        (await run("ip", ["link", "show", "dev", wg])).code,
        0,
        `interface ${wg} left on the host`,
      );
      assert.deepEqual(liveProcessesMentioning(` ${wg}`), [], `wireguard-go of ${wg} left`);
    }
    assert.deepEqual(liveProcessesMentioning(dir), [], "dockerd or containerd left");
    assert.equal(exists(dir), false, "lab directory left");
    const again = await ok(["lab", "down", ...at]);
    assert.match(again.stdout, /No lab in/);
  },
}));

Deno.test(needs(["lab"], {
  name: "ployz lab --profile regional: mesh traffic crosses the latency relay",
  async fn() {
    const { name, dir, at } = labPlace("r");
    try {
      await ok([
        "lab",
        "up",
        "--machines",
        "2",
        "--profile",
        "regional",
        "--name",
        name,
        "--image",
        "none/none:0",
        ...at,
      ]);
      // The first packets wait for the handshake; measure after it.
      await ployz(labExec("m1", at, ["ping", "-c", "3", "-W", "5", "10.210.1.1"]));
      const ping = await ok(labExec("m1", at, ["ping", "-c", "5", "-i", "0.2", "-W", "5", "10.210.1.1"]));
      const min = Number(/= ([\d.]+)\//.exec(ping.stdout)?.[1]);
      // regional is 50 ± 5 ms each way, so no round trip is shorter than 90 ms.
      assert.ok(min >= 85, `round trip ${min} ms under the regional profile: ${ping.stdout}`);
    } finally {
      const down = await ployz(["lab", "down", ...at]);
      assert.equal(down.code, 0, `lab down failed: ${down.stderr}`);
    }
    assert.deepEqual(liveProcessesMentioning(dir), [], "relay or dockerd left");
    assert.equal(exists(dir), false, "lab directory left");
  },
}));

Deno.test("ployz lab refuses clearly: unknown lab, bad name, bad profile", async () => {
  const missing = await ployz(["lab", "status", "--dir", "/nonexistent/ployz-lab"]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^error\[not_found\]: Cannot find a lab in "\/nonexistent\/ployz-lab"/);
  assert.doesNotMatch(missing.stderr, /\n\s+at /, "no stack trace");
  const name = await ployz(["lab", "up", "--name", "Bad_Name", "--dir", "/nonexistent/ployz-lab"]);
  assert.equal(name.code, 1);
  assert.match(name.stderr, /^error\[invalid_argument\]: Cannot use lab name "Bad_Name"/);
  const usage = await ployz(["lab", "up", "--profile", "bogus"]);
  assert.equal(usage.code, 2);
});
