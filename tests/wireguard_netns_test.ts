// Two network namespaces joined by a veth pair, each with a real WireGuard interface (wireguard-go here, where the
// kernel has no module): handshakes seen through readHandshakes, pings between Machine Subnets and Management
// Addresses, and endpoint selection moving off a dead candidate.
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  EndpointDriver,
  ensureInterface,
  ensurePrivateKeyFile,
  hostRunner,
  managementAddress,
  netnsRunner,
  peerAllowedIps,
  readHandshakes,
  readPeers,
  removeInterface,
  runChecked,
  setPeers,
  syncRoutes,
} from "../lib/mesh/mod.ts";
import { needs } from "./support/needs.ts";
import { eventually } from "./support/poll.ts";

Deno.test(needs(["wireguard"], {
  name: "two namespaces handshake over wireguard-go and route Machine Subnets and Management Addresses",
  async fn() {
    const tag = crypto.randomUUID().slice(0, 6);
    const host = hostRunner();
    const dir = await Deno.makeTempDir({ prefix: "ployz-mesh-" });
    // Side a is 192.0.2.1 with 10.210.0.0/24, side b 192.0.2.2 with 10.210.1.0/24.
    const sides = (["a", "b"] as const).map((x, i) => ({
      ns: `pzm-${tag}-${x}`,
      wg: `wt${tag}${x}`,
      veth: `v${x}${tag}`,
      under: `192.0.2.${i + 1}`,
      subnet: `10.210.${i}.0/24`,
      gw: `10.210.${i}.1`,
    }));
    try {
      for (const s of sides) await runChecked(host, "ip", ["netns", "add", s.ns]);
      await runChecked(host, "ip", [
        "link",
        "add",
        sides[0].veth,
        "netns",
        sides[0].ns,
        "type",
        "veth",
        "peer",
        "name",
        sides[1].veth,
        "netns",
        sides[1].ns,
      ]);
      const keys: string[] = [];
      for (const s of sides) {
        const r = netnsRunner(s.ns);
        await runChecked(r, "ip", ["link", "set", "lo", "up"]);
        await runChecked(r, "ip", ["addr", "add", `${s.under}/24`, "dev", s.veth]);
        await runChecked(r, "ip", ["link", "set", s.veth, "up"]);
        // Stands in for the Docker bridge: the gateway address the Machine's own mesh traffic comes from.
        await runChecked(r, "ip", ["addr", "add", `${s.gw}/32`, "dev", "lo"]);
        const keyPath = join(dir, s.ns, "wg.key");
        const { publicKey } = await ensurePrivateKeyFile(keyPath);
        keys.push(publicKey);
        const created = await ensureInterface(r, {
          name: s.wg,
          privateKeyPath: keyPath,
          addresses: [`${managementAddress(publicKey)}/128`],
        });
        assert.equal(created.created, true);
        assert.equal((await ensureInterface(r, { name: s.wg, privateKeyPath: keyPath })).created, false);
      }
      const [a, b] = sides;
      const [ra, rb] = [netnsRunner(a.ns), netnsRunner(b.ns)];
      // A learns B's endpoints with a dead one first; B knows A's real endpoint.
      const dead = "192.0.2.99:51820";
      await setPeers(ra, a.wg, [{
        publicKey: keys[1],
        endpoints: [dead, `${b.under}:51820`],
        allowedIps: peerAllowedIps(b.subnet, keys[1]),
      }]);
      await setPeers(rb, b.wg, [{
        publicKey: keys[0],
        endpoints: [],
        allowedIps: peerAllowedIps(a.subnet, keys[0]),
      }]);
      await syncRoutes(ra, a.wg, [b.subnet, managementAddress(keys[1])], { src: a.gw });
      await syncRoutes(rb, b.wg, [a.subnet, managementAddress(keys[0])], { src: b.gw });
      assert.equal((await readPeers(ra, a.wg))[0].endpoint, dead);
      assert.equal((await readHandshakes(ra, a.wg)).get(keys[1]), undefined);

      const driver = new EndpointDriver(ra, a.wg, { connectionTimeoutMs: 2000, peerDownMs: 60_000 });
      driver.setCandidates([{
        publicKey: keys[1],
        endpoints: [dead, `${b.under}:51820`],
        remembered: undefined,
      }]);
      const changes: string[] = [];
      await eventually(45_000, "a handshake from namespace A to B", async () => {
        changes.push(...(await driver.tick()).map((c) => c.endpoint));
        await ra.run("ping", ["-c", "1", "-W", "1", b.gw]);
        return (await readHandshakes(ra, a.wg)).get(keys[1]) !== undefined || undefined;
      }, 300);
      assert.ok(changes.includes(`${b.under}:51820`), `the driver moved off the dead endpoint: ${changes}`);
      // On a slow host the driver may give up on the live endpoint before its handshake lands and try the dead one
      // again; WireGuard then roams to where B's authenticated reply came from, and the next tick adopts it.
      await eventually(10_000, "the driver to settle on B's live endpoint", async () => {
        await driver.tick();
        return driver.selected(keys[1]) === `${b.under}:51820` || undefined;
      }, 300);
      const handshake = (await readHandshakes(ra, a.wg)).get(keys[1])!;
      assert.ok(Math.abs(Date.now() - handshake) < 60_000, "the handshake time is recent");

      await runChecked(ra, "ping", ["-c", "2", "-W", "2", "-I", a.gw, b.gw]);
      await runChecked(rb, "ping", ["-c", "2", "-W", "2", a.gw]);
      await runChecked(ra, "ping", ["-6", "-c", "2", "-W", "2", managementAddress(keys[1])]);

      // Peers and routes converge to the wanted set: removing B drops its routes and peer.
      await setPeers(ra, a.wg, []);
      await syncRoutes(ra, a.wg, []);
      assert.deepEqual(await readPeers(ra, a.wg), []);
      const routes = await runChecked(ra, "ip", ["route", "show", "dev", a.wg]);
      assert.equal(routes.includes(b.subnet.replace("/24", "")), false);
      assert.equal((await ra.run("ping", ["-c", "1", "-W", "1", b.gw])).code !== 0, true);
    } finally {
      for (const s of sides) {
        await removeInterface(netnsRunner(s.ns), s.wg).catch(() => {});
        await host.run("ip", ["netns", "del", s.ns]);
      }
      await Deno.remove(dir, { recursive: true });
    }
    // wireguard-go exits when its interface goes, and removes its UAPI socket.
    for (const s of sides) {
      await eventually(10_000, `the UAPI socket of "${s.wg}" to go`, async () => {
        try {
          await Deno.stat(`/var/run/wireguard/${s.wg}.sock`);
          return undefined;
        } catch {
          return true;
        }
      }, 300);
    }
  },
}));
