// The mesh firewall in a real network namespace with real iptables and ip6tables: installed once, a second pass
// changes nothing; each part a reload can remove is put back by the next pass, and only that part.
import assert from "node:assert/strict";
import {
  ensureContainerForwarding,
  ensureMeshFirewall,
  FORWARD_CHAIN,
  hostRunner,
  MESH_CHAIN,
  NAT_CHAIN,
  netnsRunner,
  removeMeshFirewall,
  runChecked,
} from "../lib/mesh/mod.ts";
import { needs } from "./support/needs.ts";

const WG = "wgfw0";
const containers = { interfaceName: WG, subnet: "10.210.3.0/24", clusterNetwork: "10.210.0.0/16" };

Deno.test(needs(["root", "command:ip", "command:iptables", "command:ip6tables", "command:nsenter"], {
  name: "mesh firewall: idempotent, every removed part put back by the next pass, IPv6 too",
  async fn() {
    const ns = `pzfw-${crypto.randomUUID().slice(0, 6)}`;
    const host = hostRunner();
    await runChecked(host, "ip", ["netns", "add", ns]);
    const r = netnsRunner(ns);
    const ipt = (args: string[]) => r.run("iptables", ["-w", ...args]);
    try {
      const input = { interfaceName: WG, ports: [51000] };
      assert.deepEqual(await ensureMeshFirewall(r, input), [
        `${MESH_CHAIN} (IPv4)`,
        "INPUT jump (IPv4)",
        `${MESH_CHAIN} (IPv6)`,
        "INPUT jump (IPv6)",
      ]);
      assert.deepEqual(await ensureContainerForwarding(r, containers), [
        FORWARD_CHAIN,
        "FORWARD jump",
        NAT_CHAIN,
        "POSTROUTING jump",
      ]);
      // Intact: nothing rebuilt (a pass runs on every tick; rebuilding would open a window each time).
      assert.deepEqual(await ensureMeshFirewall(r, input), []);
      assert.deepEqual(await ensureContainerForwarding(r, containers), []);
      const v6 = await r.run("ip6tables", ["-w", "-S", MESH_CHAIN]);
      assert.match(v6.stdout, new RegExp(`-A ${MESH_CHAIN} -i ${WG} -p tcp -m tcp --dport 51000 -j ACCEPT`));
      assert.match(v6.stdout, new RegExp(`-A ${MESH_CHAIN} -p tcp -m tcp --dport 51000 -j DROP`));

      // A firewall reload that flushed INPUT (both families): only the jumps come back.
      await ipt(["-F", "INPUT"]);
      await r.run("ip6tables", ["-w", "-F", "INPUT"]);
      assert.deepEqual(await ensureMeshFirewall(r, input), ["INPUT jump (IPv4)", "INPUT jump (IPv6)"]);
      assert.equal((await ipt(["-C", "INPUT", "-j", MESH_CHAIN])).code, 0);
      // A rule added by hand to the chain is taken out again.
      await ipt(["-I", MESH_CHAIN, "1", "-p", "tcp", "--dport", "51000", "-j", "ACCEPT"]);
      assert.deepEqual(await ensureMeshFirewall(r, input), [`${MESH_CHAIN} (IPv4)`]);

      // Docker's MASQUERADE inserted at the top of POSTROUTING (a dockerd restart): our jump moves back to first.
      await ipt([
        "-t",
        "nat",
        "-I",
        "POSTROUTING",
        "1",
        "-s",
        "10.210.3.0/24",
        "!",
        "-o",
        "br0",
        "-j",
        "MASQUERADE",
      ]);
      assert.deepEqual(await ensureContainerForwarding(r, containers), ["POSTROUTING jump"]);
      const post = (await ipt(["-t", "nat", "-S", "POSTROUTING"])).stdout.split("\n").filter((l) =>
        l.startsWith("-A")
      );
      assert.equal(post[0], `-A POSTROUTING -j ${NAT_CHAIN}`);
      assert.equal(post.filter((l) => l.includes(NAT_CHAIN)).length, 1);
      // Docker managing iptables: the FORWARD admission is jumped to from DOCKER-USER.
      await ipt(["-N", "DOCKER-USER"]);
      await ipt(["-A", "DOCKER-USER", "-j", "RETURN"]);
      assert.deepEqual(await ensureContainerForwarding(r, containers), ["DOCKER-USER jump"]);
      const user = (await ipt(["-S", "DOCKER-USER"])).stdout;
      assert.match(user, new RegExp(`-A DOCKER-USER -j ${FORWARD_CHAIN}\\n-A DOCKER-USER -j RETURN`));
      const forward = (await ipt(["-S", FORWARD_CHAIN])).stdout;
      assert.match(forward, /-A PLOYZ-FORWARD -s 10\.210\.0\.0\/16 -d 10\.210\.3\.0\/24 -i wgfw0 -j ACCEPT/);
      assert.match(forward, /-A PLOYZ-FORWARD -s 10\.210\.3\.0\/24 -d 10\.210\.0\.0\/16 -o wgfw0 -j ACCEPT/);
      const nat = (await ipt(["-t", "nat", "-S", NAT_CHAIN])).stdout;
      assert.match(nat, /-A PLOYZ-POSTROUTING -s 10\.210\.3\.0\/24 -d 10\.210\.0\.0\/16 -j RETURN/);
      assert.match(nat, /-A PLOYZ-POSTROUTING -s 10\.210\.3\.0\/24 ! -d 10\.210\.0\.0\/16 -j MASQUERADE/);

      await removeMeshFirewall(r);
      for (
        const [tool, table, chain] of [
          ["iptables", "filter", MESH_CHAIN],
          ["ip6tables", "filter", MESH_CHAIN],
          ["iptables", "filter", FORWARD_CHAIN],
          ["iptables", "nat", NAT_CHAIN],
        ]
      ) {
        assert.notEqual(
          (await r.run(tool, ["-w", "-t", table, "-S", chain])).code,
          0,
          `${tool} ${chain} left`,
        );
      }
    } finally {
      await host.run("ip", ["netns", "del", ns]);
    }
  },
}));
