// `ployzd dns` under the dns permission set exactly as deno.json grants it (no loopback extras), in a network
// namespace of its own: it answers container clients on every private network a Cluster may be founded on
// (10/8, 172.16/12, 192.168/16: `machine init --subnet` accepts those), and nobody outside them.
import { deepEqual } from "node:assert/strict";
import { join } from "node:path";
import { renderDnsSpec, writeDnsSpec } from "../lib/dns/mod.ts";
import { layoutFromEnv, permissionFlags, permissionSet, relocate } from "../lib/permissions/mod.ts";
import { startDns } from "./support/dns.ts";
import { needs } from "./support/needs.ts";
import { run, tempLayout } from "./support/spawn.ts";

const LISTEN = "10.217.1.1";
/** Where containers of a Cluster on each private range ask from; the last is no Cluster's. */
const CLIENTS = { "10/8": "10.217.1.9", "172.16/12": "172.20.3.9", "192.168/16": "192.168.7.9" };
const OUTSIDER = "203.0.113.9";

async function checked(cmd: string, args: string[]): Promise<void> {
  const out = await run(cmd, args);
  if (out.code !== 0) throw new Error(`${cmd} ${args.join(" ")}: ${out.stderr}`);
}

/** dig's answer to `name` asked from `source` inside `ns`, or "" after one 2 s try. */
async function dig(ns: string, source: string, name: string): Promise<string> {
  const out = await run("ip", [
    "netns",
    "exec",
    ns,
    "dig",
    `@${LISTEN}`,
    "-b",
    source,
    name,
    "+short",
    "+time=2",
    "+tries=1",
  ]);
  return out.code === 0 ? out.stdout.trim().split("\n").sort().join(",") : "";
}

Deno.test(needs(["root", "command:ip", "command:dig"], {
  name: "ployzd dns under the dns set answers clients on every private Cluster network, nobody else",
  async fn() {
    const ns = `pzdn-${crypto.randomUUID().slice(0, 6)}`;
    await checked("ip", ["netns", "add", ns]);
    try {
      await checked("ip", ["-n", ns, "link", "set", "lo", "up"]);
      for (const address of [LISTEN, ...Object.values(CLIENTS), OUTSIDER]) {
        await checked("ip", ["-n", ns, "addr", "add", `${address}/32`, "dev", "lo"]);
      }
      await using layout = await tempLayout();
      // Only the paths move to the test layout; the network grants are deno.json's own.
      const flags = permissionFlags(relocate(permissionSet("dns"), layoutFromEnv((k) => layout.env[k])));
      await writeDnsSpec(
        join(layout.runDir, "dns.json"),
        renderDnsSpec({
          machineId: "m1",
          listen: [`${LISTEN}:53`],
          upstreams: [],
          generatedAt: new Date(),
          services: [{
            project: "shop",
            service: "web",
            replicas: [{ address: "10.217.1.5", machineId: "m1" }, {
              address: "10.217.2.5",
              machineId: "m2",
            }],
          }],
        }),
      );
      await using dns = startDns(layout, flags, [], ns);
      await dns.waitFor(/Serving spec format/);
      for (const [range, client] of Object.entries(CLIENTS)) {
        deepEqual(
          { range, answer: await dig(ns, client, "web.shop.internal") },
          { range, answer: "10.217.1.5,10.217.2.5" },
        );
      }
      deepEqual(await dig(ns, OUTSIDER, "web.shop.internal"), "", "no reply leaves for a public address");
    } finally {
      await run("ip", ["netns", "del", ns]);
    }
  },
}));
